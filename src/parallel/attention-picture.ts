import { headDim, type LayerConfig } from './config.ts';
import { rankOwnership } from './ownership.ts';
import { gatheredQkv, gathersQkv, qkvPieces } from './qkv-layout.ts';

/** A run of linear_qkv's output columns: one query head, or one group's k or v (or the part of it a slice holds). */
export interface QkvSlicePiece {
  readonly kind: 'q' | 'k' | 'v';
  readonly group: number;
  /** The query head (q pieces only). */
  readonly head?: number;
  /** Columns of the piece this rank computes, and the piece's full width d. */
  readonly cols: number;
  readonly of: number;
}

/**
 * Who computes what of attention, per rank: the linear_qkv output columns it computes (its even
 * slice of Megatron's per-group interleaved layout, cut at head and q/k/v boundaries), and the
 * query heads and KV group its attention reads — the same ones when groups ≥ t; when groups < t
 * the slices are all-gathered along the last dim first and each rank takes its group's block.
 */
export interface AttentionPicture {
  readonly heads: readonly { readonly head: number; readonly rank: number; readonly group: number }[];
  /** The ranks whose attention reads each KV group (t/groups of them when groups < t). */
  readonly groups: readonly { readonly group: number; readonly ranks: readonly number[] }[];
  readonly slices: readonly { readonly rank: number; readonly pieces: readonly QkvSlicePiece[] }[];
  /** groups < t: the QKV activations are all-gathered before attention (Megatron-Core, core_v0.16 on). */
  readonly gathered: boolean;
  /** groups < t: the group block each rank takes from the gathered QKV. */
  readonly blocks?: readonly number[];
}

/** The heads / KV groups / linear_qkv slices picture of a valid config. */
export function attentionPicture(c: LayerConfig): AttentionPicture {
  const own = rankOwnership(c);
  const d = headDim(c);
  const perGroup = c.heads / c.groups;
  const heads = Array.from({ length: c.heads }, (_, head) => ({
    head,
    rank: own.findIndex((o) => head >= o.heads[0] && head < o.heads[1]),
    group: Math.floor(head / perGroup),
  }));
  const groups = Array.from({ length: c.groups }, (_, group) => ({
    group,
    ranks: own.filter((o) => o.kvGroups.includes(group)).map((o) => o.rank),
  }));
  // The interleaved layout cut into single heads: q heads of group 0 one by one, k0, v0, group 1, …
  type Unit = { kind: QkvSlicePiece['kind']; group: number; head?: number; at: number };
  const units = qkvPieces(c).flatMap((p): Unit[] =>
    p.kind !== 'q'
      ? [{ kind: p.kind, group: p.group, at: p.at }]
      : Array.from({ length: perGroup }, (_, i) => ({
          kind: p.kind,
          group: p.group,
          head: p.group * perGroup + i,
          at: p.at + i * d,
        })),
  );
  const slices = own.map((o) => {
    const [c0, c1] = o.qkvCols;
    const pieces = units
      .map((u) => ({ ...u, cols: Math.min(c1, u.at + d) - Math.max(c0, u.at), of: d }))
      .filter((u) => u.cols > 0)
      .map(({ at: _at, ...u }): QkvSlicePiece => u);
    return { rank: o.rank, pieces };
  });
  const gathered = gathersQkv(c);
  return {
    heads,
    groups,
    slices,
    gathered,
    ...(gathered && { blocks: own.map((o) => gatheredQkv(c, o.rank).block) }),
  };
}
