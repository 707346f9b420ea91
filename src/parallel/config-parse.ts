import { quoted } from '../core/quote.ts';
import { configFromPreset, presetNames, type LayerConfig, type PresetName } from './config.ts';

/** The size fields a user may set by name (CLI flags, URL hash keys). */
export const sizeFields = ['s', 'b', 'h', 'heads', 'groups', 'ffn', 'vocab', 'seed'] as const;

/** One of those fields. */
export type SizeField = (typeof sizeFields)[number];

/** Raw text settings, as they come from flags or a URL hash. */
export type RawSettings = Partial<Record<SizeField | 'preset' | 'sp' | 'tp', string>>;

/** Parses a whole number, or throws a message naming the setting and what to write instead. */
export function parseWhole(name: string, text: string, min = 0): number {
  const v = Number(text);
  if (!/^\s*-?\d+\s*$/.test(text) || !Number.isSafeInteger(v) || v < min) {
    throw new Error(`${name} must be a whole number ≥ ${min}, got ${quoted(text)}.`);
  }
  return v;
}

/** Parses a list of TP degrees like "1,2,4,8". */
export function parseDegrees(text: string): number[] {
  const parts = text
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p);
  if (!parts.length) throw new Error(`--tp needs one or more degrees such as 1,2,4,8; got ${quoted(text)}.`);
  return parts.map((p) => parseWhole('a TP degree', p, 1));
}

/** The preset named by `text`, or an error listing the presets. */
export function parsePreset(text: string): PresetName {
  if (!(presetNames as string[]).includes(text))
    throw new Error(`unknown preset ${quoted(text)}; presets are ${presetNames.join(', ')}.`);
  return text as PresetName;
}

/** Parses an on/off setting ("1", "true", "on", "0", "false", "off", or empty for on). */
export function parseSwitch(name: string, text: string): boolean {
  const t = text.trim().toLowerCase();
  if (['', '1', 'true', 'on', 'yes'].includes(t)) return true;
  if (['0', 'false', 'off', 'no'].includes(t)) return false;
  throw new Error(`${name} must be on or off (1/0, true/false), got ${quoted(text)}.`);
}

/**
 * A configuration from a preset (default `classroom`) overridden by explicit sizes, at degree
 * `tp` (the raw `tp` if none given). Parsing only: the caller validates the result.
 */
export function configFromSettings(raw: RawSettings, tp?: number): LayerConfig {
  const preset = parsePreset(raw.preset ?? 'classroom');
  const over: Partial<Record<SizeField, number>> = {};
  for (const f of sizeFields) {
    const text = raw[f];
    if (text !== undefined) over[f] = parseWhole(`--${f}`, text, f === 'vocab' || f === 'seed' ? 0 : 1);
  }
  return configFromPreset(preset, {
    ...over,
    tp: tp ?? (raw.tp !== undefined ? parseWhole('tp', raw.tp, 1) : 1),
    sp: raw.sp !== undefined ? parseSwitch('sp', raw.sp) : false,
  });
}
