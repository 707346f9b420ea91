// The page's settings and their URL-hash form (pure, no DOM), in the manner of tensorflow/playground's state.ts.
import {
  configDefaults,
  configFromPreset,
  presets,
  type LayerConfig,
  type ModelSizes,
  type PresetName,
} from '../../parallel/config.ts';
import { parsePreset, parseSwitch, parseWhole } from '../../parallel/config-parse.ts';
import { parseInterconnect, type Interconnect } from '../../hardware/interconnect.ts';
import { quoted } from '../../core/quote.ts';
import { parseDtype, type TrainDtype } from '../../hardware/dtype.ts';
import { parseGlobalBatch, type GlobalBatchSetting } from '../../megatron/global-batch.ts';
import { defaultSystem, parseSystem } from '../../hardware/systems.ts';

/** Which pass the timeline shows. */
export type PassView = 'forward' | 'backward' | 'both';

/**
 * Which machine the timeline describes: a real cluster (compute projected on the system's GPU,
 * communication on its links), this browser as the cluster (compute and transport measured
 * here), or the custom mix (compute measured here, communication on the modeled `net` link).
 */
export type MachineMode = 'cluster' | 'browser' | 'custom';

/** Every machine mode, in display order. */
export const machineModes: readonly MachineMode[] = ['cluster', 'browser', 'custom'];

/** Which main view the page shows ('classroom' and 'gemm' come with a later issue). */
export type MainView = 'timeline' | 'classroom' | 'gemm' | 'trace';

/**
 * Everything the page shows, as the URL hash holds it. `net` is 'measured' (the in-browser
 * transport), an interconnect preset key, or 'custom:<α µs>:<GB/s>'.
 */
export interface Settings extends ModelSizes {
  readonly preset: PresetName;
  readonly tp: number;
  readonly sp: boolean;
  /** Demonstration (seed M035): skip the SP all-reduce of the RMSNorm weight gradients; the oracle then flags dg1, dg2. */
  readonly skipSpNormGradAllReduce: boolean;
  readonly net: string;
  readonly overlap: boolean;
  readonly pass: PassView;
  readonly view: MainView;
  /** The classroom's step, 1-based (`#view=classroom&step=5` opens step 5); clamped to the steps there are. */
  readonly step: number;
  readonly machine: MachineMode;
  /** A system of the catalog (src/hardware/systems.ts) or custom:<gpu>:<per node>:<α µs>:<GB/s>. */
  readonly system: string;
  /** The projected training format (the WebGPU run is always fp32). */
  readonly dtype: TrainDtype;
  /** L: transformer layers of the projected model. */
  readonly layers: number;
  /** N: the GPU budget of the cluster panel (t × DP = N). */
  readonly gpus: number;
  /** The cluster panel's global batch (Megatron --global-batch-size): 'auto' is b·N. */
  readonly gbatch: GlobalBatchSetting;
}

/** A hash key that could not be used, and what the page did instead. */
export interface HashMessage {
  readonly key: string;
  readonly message: string;
}

/** Settings read from a hash, plus a message for every key that was unknown or malformed. */
export interface ParsedHash {
  readonly settings: Settings;
  readonly messages: readonly HashMessage[];
}

/** Every pass view, in display order. */
export const passViews: readonly PassView[] = ['forward', 'backward', 'both'];
/** Every main view, in display order. */
export const mainViews: readonly MainView[] = ['timeline', 'classroom', 'gemm', 'trace'];

/** The size keys, in display order (each overrides the preset's value). */
export const sizeKeys = [
  's',
  'b',
  'h',
  'heads',
  'groups',
  'ffn',
  'vocab',
] as const satisfies readonly (keyof ModelSizes)[];

/**
 * Defaults: the classroom preset (every number fits on a slide) at t = 2, the smallest degree that
 * communicates, so the first view already shows collectives and exposed time; communication
 * modeled on PCIe Gen3 (the seeds' V100 box) so the picture does not depend on this browser;
 * Megatron's async dgrad all-reduce overlap on; both passes.
 */
export const defaultSettings: Settings = {
  preset: 'classroom',
  ...presets.classroom,
  tp: 2,
  sp: false,
  skipSpNormGradAllReduce: false,
  net: 'pcie-gen3',
  overlap: true,
  pass: 'both',
  view: 'timeline',
  step: 1,
  machine: 'cluster',
  system: defaultSystem,
  dtype: 'fp16',
  layers: 12,
  gpus: 8,
  gbatch: 'auto',
};

/** Every key the hash understands. */
export const hashKeys = [
  'preset',
  ...sizeKeys,
  'tp',
  'sp',
  'skipnorm',
  'net',
  'overlap',
  'pass',
  'view',
  'step',
  'machine',
  'system',
  'dtype',
  'layers',
  'gpus',
  'gbatch',
] as const;

function parseChoice<T extends string>(key: string, text: string, choices: readonly T[]): T {
  if ((choices as readonly string[]).includes(text)) return text as T;
  throw new Error(`${key} must be one of ${choices.join(', ')}, got ${quoted(text)}.`);
}

/** Checks a `net` value ('measured', a preset key, 'custom:α:B'); throws the interconnect's message. */
export function parseNet(text: string): string {
  if (text !== 'measured') parseInterconnect(text);
  return text;
}

/** The interconnect a `net` value models, or 'measured'. Throws on a malformed value. */
export function commOf(net: string): 'measured' | Interconnect {
  return net === 'measured' ? 'measured' : parseInterconnect(net);
}

/** Unknown keys a message names before it says how many more there are. */
const unknownListMax = 8;

/** One message for every unknown key (a link with 200 of them gets one line, not 200). */
function unknownKeysMessage(keys: readonly string[]): HashMessage {
  const named = keys
    .slice(0, unknownListMax)
    .map((k) => quoted(k))
    .join(', ');
  const more = keys.length > unknownListMax ? ` and ${keys.length - unknownListMax} more` : '';
  const what = keys.length === 1 ? `unknown key ${named}` : `${keys.length} unknown keys ${named}${more}`;
  return { key: keys[0], message: `${what} ignored; the keys are ${hashKeys.join(', ')}.` };
}

/**
 * Settings from a location hash ("#tp=4&sp=1&preset=llama-gqa"). The preset sets the sizes, then
 * explicit size keys override them. A malformed value keeps the default and yields a message; so
 * does an unknown key. Never throws.
 */
export function settingsFromHash(hash: string): ParsedHash {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  const messages: HashMessage[] = [];
  const known = new Set<string>(hashKeys);
  const unknown = [...new Set(params.keys())].filter((key) => !known.has(key));
  if (unknown.length) messages.push(unknownKeysMessage(unknown));
  const read = <T>(key: string, parse: (text: string) => T, fallback: T): T => {
    const text = params.get(key);
    if (text === null) return fallback;
    try {
      return parse(text);
    } catch (e) {
      messages.push({
        key,
        message: `${e instanceof Error ? e.message : String(e)} Using ${key}=${String(fallback)}.`,
      });
      return fallback;
    }
  };
  const preset = read('preset', parsePreset, defaultSettings.preset);
  const sizes = { ...presets[preset] } as Record<(typeof sizeKeys)[number], number>;
  for (const k of sizeKeys) sizes[k] = read(k, (t) => parseWhole(k, t, k === 'vocab' ? 0 : 1), sizes[k]);
  return {
    settings: {
      preset,
      ...sizes,
      tp: read('tp', (t) => parseWhole('tp', t, 1), defaultSettings.tp),
      sp: read('sp', (t) => parseSwitch('sp', t), defaultSettings.sp),
      skipSpNormGradAllReduce: read(
        'skipnorm',
        (t) => parseSwitch('skipnorm', t),
        defaultSettings.skipSpNormGradAllReduce,
      ),
      net: read('net', parseNet, defaultSettings.net),
      overlap: read('overlap', (t) => parseSwitch('overlap', t), defaultSettings.overlap),
      pass: read('pass', (t) => parseChoice('pass', t, passViews), defaultSettings.pass),
      view: read('view', (t) => parseChoice('view', t, mainViews), defaultSettings.view),
      step: read('step', (t) => parseWhole('step', t, 1), defaultSettings.step),
      machine: read('machine', (t) => parseChoice('machine', t, machineModes), defaultSettings.machine),
      system: read('system', (t) => (parseSystem(t), t), defaultSettings.system),
      dtype: read('dtype', parseDtype, defaultSettings.dtype),
      layers: read('layers', (t) => parseWhole('layers', t, 1), defaultSettings.layers),
      gpus: read('gpus', (t) => parseWhole('gpus', t, 1), defaultSettings.gpus),
      gbatch: read('gbatch', parseGlobalBatch, defaultSettings.gbatch),
    },
    messages,
  };
}

/**
 * The hash of some settings: preset, tp, sp, net, overlap, pass and view always (a link states
 * them), sizes only where they differ from the preset's. settingsFromHash(hashFromSettings(x)) = x.
 */
export function hashFromSettings(s: Settings): string {
  const p = new URLSearchParams();
  p.set('preset', s.preset);
  for (const k of sizeKeys) if (s[k] !== presets[s.preset][k]) p.set(k, String(s[k]));
  p.set('tp', String(s.tp));
  p.set('sp', s.sp ? '1' : '0');
  if (s.skipSpNormGradAllReduce) p.set('skipnorm', '1'); // a demonstration switch: only in links that use it
  p.set('net', s.net);
  p.set('overlap', s.overlap ? '1' : '0');
  p.set('pass', s.pass);
  p.set('view', s.view);
  if (s.step !== defaultSettings.step) p.set('step', String(s.step)); // the classroom's slide: only in links that use it
  // The machine (issue 9): only where it differs from the default (the seeds' 8×V100 PCIe box, fp16, 12 layers, 8 GPUs, global batch b·N).
  for (const k of ['machine', 'system', 'dtype', 'layers', 'gpus', 'gbatch'] as const)
    if (s[k] !== defaultSettings[k]) p.set(k, String(s[k]));
  // URLSearchParams escapes ':' in custom:α:B; keep it readable (':' is legal in a fragment).
  return `#${p.toString().replace(/%3A/gi, ':')}`;
}

/** Settings with a new preset: the preset's sizes replace the current ones. */
export function withPreset(s: Settings, preset: PresetName): Settings {
  return { ...s, preset, ...presets[preset] };
}

/** The layer configuration of some settings (seed and numerics from the config defaults). */
export function configOf(s: Settings): LayerConfig {
  const sizes: ModelSizes = { s: s.s, b: s.b, h: s.h, heads: s.heads, groups: s.groups, ffn: s.ffn, vocab: s.vocab };
  return configFromPreset(s.preset, {
    ...sizes,
    tp: s.tp,
    sp: s.sp,
    seed: configDefaults.seed,
    skipSpNormGradAllReduce: s.skipSpNormGradAllReduce,
  });
}
