// The model-size flags that `npm run sweep` and `npm run project` share, in node:util parseArgs form.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { sizeFields, type RawSettings } from '../../src/parallel/config-parse.ts';

type SizeField = (typeof sizeFields)[number];

/** `--preset NAME` and one `--<field> N` per size of ModelSizes (s, b, h, heads, groups, ffn, vocab). */
export const sizeFlagOptions = {
  preset: { type: 'string' },
  s: { type: 'string' },
  b: { type: 'string' },
  h: { type: 'string' },
  heads: { type: 'string' },
  groups: { type: 'string' },
  ffn: { type: 'string' },
  vocab: { type: 'string' },
} as const;

/**
 * The values of `options` (which must include `help`) from the command line; prints `usage` and
 * exits 0 on --help, calls `fail` with parseArgs's message on a bad flag.
 */
export function cliValues<const O extends NonNullable<ParseArgsConfig['options']>>(
  options: O,
  usage: string,
  fail: (message: string) => never,
): ReturnType<typeof parseArgs<{ options: O }>>['values'] {
  let values: ReturnType<typeof parseArgs<{ options: O }>>['values'];
  try {
    values = parseArgs({ options }).values;
  } catch (e) {
    fail((e as Error).message);
  }
  if ((values as { help?: boolean }).help) {
    console.log(usage);
    process.exit(0);
  }
  return values;
}

/** The size flags given (`--preset`, `--s`, …) as RawSettings for configFromSettings. */
export function rawSizeSettings(
  values: { readonly preset?: string } & Partial<Record<SizeField, string>>,
): RawSettings {
  const raw: RawSettings = { preset: values.preset };
  for (const f of sizeFields) if (values[f] !== undefined) raw[f] = values[f];
  return raw;
}
