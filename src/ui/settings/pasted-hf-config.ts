// The config.json pasted or dropped on the page: read by the CLI's reader (megatron/hf-config.ts) and kept in this tab's sessionStorage, which `cmodel=hf:pasted` names.
import { parseHfConfig, type HfModel } from '../../megatron/hf-config.ts';

/**
 * The most characters a pasted config.json may have: 64 Ki, ample for the families read here (some
 * 30 to 50 fields of a few dozen characters each), so a 10 MB paste is refused before it is parsed
 * or kept (sessionStorage holds some 5 M characters per origin).
 */
export const pastedConfigMaxChars = 64 * 1024;

/** The sessionStorage key of the pasted text. */
const storageKey = 'tp-playground.pasted-hf-config';

/** Where the text lives when sessionStorage is absent (Node) or refuses it (a full quota, a private window). */
let inMemory: string | undefined;

/** The parse of the text last read, so renders do not parse it again. */
let cache: { readonly text: string; readonly model: HfModel } | undefined;

const storage = (): Storage | undefined => {
  try {
    return globalThis.sessionStorage;
  } catch {
    return undefined;
  }
};

/** Throws when `chars` (of `what`: the pasted text, a dropped file's bytes) is more than pastedConfigMaxChars. */
export function checkPastedLength(chars: number, what: string): void {
  if (chars > pastedConfigMaxChars)
    throw new Error(
      `${what} has ${chars.toLocaleString('en-US')} characters, more than the ${pastedConfigMaxChars.toLocaleString('en-US')} taken here (a config.json has a few dozen fields): paste the model's config.json itself.`,
    );
}

/**
 * Reads a pasted config.json as `npm run project -- --hf-config FILE` does (parseHfConfig); throws
 * what is wrong and what to change: too long, not JSON, a missing required field, a field of the
 * wrong kind, or a model the projection cannot price yet.
 */
export function readPastedConfig(text: string): HfModel {
  checkPastedLength(text.length, 'the pasted text');
  if (cache?.text === text) return cache.model;
  const model = parseHfConfig(text);
  if (model.cannotProject.length)
    throw new Error(`the projection cannot price this model yet: ${model.cannotProject.join(' ')}`);
  cache = { text, model };
  return model;
}

/** Reads `text` (readPastedConfig, which throws its message) and keeps it for this tab; returns the model. */
export function keepPastedConfig(text: string): HfModel {
  const model = readPastedConfig(text);
  inMemory = text;
  try {
    storage()?.setItem(storageKey, text);
  } catch {
    // A full or refused sessionStorage: the text stays for this page's life (inMemory) only.
  }
  return model;
}

/** The config.json kept in this tab, or undefined. */
export function pastedConfigText(): string | undefined {
  try {
    return storage()?.getItem(storageKey) ?? inMemory;
  } catch {
    return inMemory;
  }
}

/** The model of the config.json kept in this tab; throws when there is none or it no longer reads. */
export function pastedHfModel(): HfModel {
  const text = pastedConfigText();
  if (text === undefined)
    throw new Error(
      'cmodel=hf:pasted names a config.json pasted in this tab, and this tab has none (a pasted config stays in the tab that pasted it): paste or drop the config.json under "cluster model", or choose a built-in one.',
    );
  return readPastedConfig(text);
}

/** Forgets the kept config (tests). */
export function forgetPastedConfig(): void {
  inMemory = undefined;
  cache = undefined;
  try {
    storage()?.removeItem(storageKey);
  } catch {
    // nothing kept there
  }
}
