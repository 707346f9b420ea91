import type { ModelShape } from '../../src/parallel/config.ts';

/**
 * The model line's sizes, as every projection command prints them: s, b (when the sizes carry
 * it), h, heads, groups, the head width d where --kv-channels sets it apart from h / heads, ffn, vocab.
 */
export const modelSizesText = (z: Omit<ModelShape, 'b'> & { readonly b?: number }): string =>
  `s ${z.s}${z.b !== undefined ? `, b ${z.b}` : ''}, h ${z.h}, heads ${z.heads}, groups ${z.groups}` +
  `${z.kvChannels !== undefined ? `, d ${z.kvChannels} (--kv-channels)` : ''}, ffn ${z.ffn}, vocab ${z.vocab}`;
