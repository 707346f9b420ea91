// The model-size flags that `npm run sweep` and `npm run project` share, in node:util parseArgs form.

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
