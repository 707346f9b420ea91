import type { LayerConfig } from './config.ts';
import type { RankOwnership } from './plan-types.ts';
import { qkvColsOfRank } from './qkv-layout.ts';

/**
 * Vocabulary padded up to a multiple of t: V_p = ⌈V/t⌉·t (0 without a vocabulary). Megatron pads
 * to a multiple of make-vocab-size-divisible-by × t; this is that rule with the divisor 1.
 */
export function paddedVocab(c: Pick<LayerConfig, 'vocab' | 'tp'>): number {
  return c.vocab > 0 ? Math.ceil(c.vocab / c.tp) * c.tp : 0;
}

/**
 * The KV query groups rank r's attention reads, for t ranks and `groups` groups (Megatron-Core):
 * groups ≥ t: the contiguous groups [r·groups/t, (r+1)·groups/t), whose weight columns it holds;
 * groups < t: the one group ⌊r / (t/groups)⌋, whose K and V it takes from the all-gathered QKV
 * activations (its weight columns are spread over the ranks' even slices, see qkv-layout.ts).
 * Assumes a valid config (groups % t = 0 or t % groups = 0).
 */
export function kvGroupsOfRank(r: number, groups: number, t: number): number[] {
  if (groups >= t) {
    const per = groups / t;
    return Array.from({ length: per }, (_, i) => r * per + i);
  }
  return [Math.floor(r / (t / groups))];
}

/** [r·n/t, (r+1)·n/t): rank r's contiguous slice of a dimension of n split t ways (n % t = 0). */
function slice(r: number, n: number, t: number): readonly [number, number] {
  return [(r * n) / t, ((r + 1) * n) / t];
}

/**
 * Who owns what on each of the t ranks of a valid config: query heads, KV groups, linear_qkv's
 * output columns (Megatron's even split of the per-group interleaved layout), FFN columns of
 * gate/up (rows of down), rows of the padded vocabulary, and the tokens of the [s/t, b, h] regions
 * under SP ([0, s) without SP). Ranges are [start, end) in global indices.
 */
export function rankOwnership(c: LayerConfig): RankOwnership[] {
  const t = c.tp;
  const vp = paddedVocab(c);
  return Array.from({ length: t }, (_, r) => ({
    rank: r,
    heads: slice(r, c.heads, t),
    kvGroups: kvGroupsOfRank(r, c.groups, t),
    qkvCols: qkvColsOfRank(c, r),
    ffn: slice(r, c.ffn, t),
    vocab: vp > 0 ? slice(r, vp, t) : ([0, 0] as const),
    tokens: c.sp ? slice(r, c.s, t) : ([0, c.s] as const),
  }));
}
