import { headDim, type LayerConfig } from './config.ts';

/**
 * Megatron-Core's fused linear_qkv output, laid out per query group (megatron/core/transformer/
 * attention.py, get_query_key_value_tensors, core_v0.19.0): with np heads, ng groups and d = h/np,
 *   [q heads of group 0 | k_0 | v_0 | q heads of group 1 | k_1 | v_1 | …],
 * each group block W/ng = (np/ng + 2)·d wide, W = (np + 2·ng)·d in all. ColumnParallelLinear splits
 * W evenly: rank r computes columns [r·W/t, (r+1)·W/t). The playground's logical weight keeps the
 * columns as [Q heads | K groups | V groups] (see layer-tensors.ts); this module maps one to the other.
 */
export interface QkvPiece {
  readonly kind: 'q' | 'k' | 'v';
  readonly group: number;
  /** First column in the per-group interleaved layout. */
  readonly at: number;
  /** First column in the logical [Q | K | V] layout. */
  readonly logical: number;
  readonly n: number;
}

/** W = (heads + 2·groups)·d: the width of linear_qkv's output. */
export const qkvOutWidth = (c: Pick<LayerConfig, 'h' | 'heads' | 'groups' | 'kvChannels'>): number =>
  (c.heads + 2 * c.groups) * headDim(c);

/** With fewer KV groups than ranks Megatron-Core gathers the QKV activations (one group per rank after the gather). */
export const gathersQkv = (c: Pick<LayerConfig, 'groups' | 'tp'>): boolean => c.groups < c.tp;

/** The 3·groups contiguous runs of the interleaved layout, in its order (q, k, v of group 0, then group 1, …). */
export function qkvPieces(c: Pick<LayerConfig, 'h' | 'heads' | 'groups' | 'kvChannels'>): QkvPiece[] {
  const d = headDim(c);
  const qn = (c.heads / c.groups) * d;
  const block = qn + 2 * d;
  return Array.from({ length: c.groups }, (_, g): QkvPiece[] => [
    { kind: 'q', group: g, at: g * block, logical: g * qn, n: qn },
    { kind: 'k', group: g, at: g * block + qn, logical: c.heads * d + g * d, n: d },
    { kind: 'v', group: g, at: g * block + qn + d, logical: (c.heads + c.groups) * d + g * d, n: d },
  ]).flat();
}

/** Rank r's columns [r·W/t, (r+1)·W/t) of the interleaved layout (W % t = 0 on a valid config). */
export function qkvColsOfRank(
  c: Pick<LayerConfig, 'h' | 'heads' | 'groups' | 'kvChannels' | 'tp'>,
  r: number,
): [number, number] {
  const w = qkvOutWidth(c) / c.tp;
  return [r * w, (r + 1) * w];
}

/**
 * The logical column runs of interleaved columns [c0, c1), in order: where each local column of
 * the rank's slice comes from in the [Q | K | V] weight (a slice may cut across heads and q/k/v).
 */
export function logicalRuns(
  c: Pick<LayerConfig, 'h' | 'heads' | 'groups' | 'kvChannels'>,
  [c0, c1]: readonly [number, number],
): { logical: number; local: number; n: number }[] {
  const runs: { logical: number; local: number; n: number }[] = [];
  for (const p of qkvPieces(c)) {
    const lo = Math.max(c0, p.at);
    const hi = Math.min(c1, p.at + p.n);
    if (lo < hi) runs.push({ logical: p.logical + lo - p.at, local: lo - c0, n: hi - lo });
  }
  return runs;
}

/**
 * Where rank r's attention reads its Q, K, V in the gathered [s, b, W] (groups < t; Megatron's
 * steps 2–4): group block ⌊r / (t/groups)⌋ of width W/groups, inside it the group's heads/groups
 * query heads, then k, then v; the rank keeps query heads (r mod (t/groups))·heads/t … +heads/t of
 * its group. Columns are in the gathered layout; n = heads/t·d for Q, d for K and V.
 */
export interface GatheredQkv {
  readonly block: number;
  /** Query heads [start, end) of the model this rank keeps. */
  readonly heads: readonly [number, number];
  readonly q: { readonly c0: number; readonly n: number };
  readonly k: { readonly c0: number; readonly n: number };
  readonly v: { readonly c0: number; readonly n: number };
}

/** Rank r's group block, query heads and Q/K/V columns of the gathered QKV (groups < t, valid config). */
export function gatheredQkv(
  c: Pick<LayerConfig, 'h' | 'heads' | 'groups' | 'kvChannels' | 'tp'>,
  r: number,
): GatheredQkv {
  const d = headDim(c);
  const perGroup = c.tp / c.groups; // ranks sharing one group
  const block = Math.floor(r / perGroup);
  const size = qkvOutWidth(c) / c.groups;
  const nq = c.heads / c.tp;
  const within = (r % perGroup) * nq; // first query head of the rank inside its group
  const base = block * size;
  const qGroup = (c.heads / c.groups) * d;
  const h0 = block * (c.heads / c.groups) + within;
  return {
    block,
    heads: [h0, h0 + nq],
    q: { c0: base + within * d, n: nq * d },
    k: { c0: base + qGroup, n: d },
    v: { c0: base + qGroup + d, n: d },
  };
}
