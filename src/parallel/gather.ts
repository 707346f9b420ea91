import { numel } from '../core/shape.ts';
import type { LayerConfig } from './config.ts';
import { localDims } from './dims.ts';
import type { RankOwnership } from './plan-types.ts';
import type { WeightName } from './weight-names.ts';
import { logicalShape, placeShard, shardLayout, weightsOf } from './weights.ts';

/** One rank's step results as host arrays (what a rank worker sends back). */
export interface RankOutput {
  readonly rank: number;
  readonly y: Float32Array;
  readonly loss?: Float32Array;
  readonly dx?: Float32Array;
  readonly grads: Partial<Record<WeightName, Float32Array>>;
}

/** A step's results in logical (TP=1) layout: y and dx [s, b, h], loss [s, b], every weight's gradient. */
export interface LogicalOutput {
  readonly y: Float32Array;
  readonly loss?: Float32Array;
  readonly dx?: Float32Array;
  readonly grads: Partial<Record<WeightName, Float32Array>>;
}

/** Concatenates per-rank token slices ([s/t, b, h] under SP) in rank order, or takes rank 0's copy. */
function tokens(c: LayerConfig, parts: readonly Float32Array[]): Float32Array {
  if (!(c.sp && c.tp > 1)) return parts[0];
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * The logical gradients of `names` from every TP rank's shards (`outs[i].rank`: its TP rank):
 * each shard placed into its blocks; replicated pieces from the lowest rank holding them.
 */
export function gatherGrads(
  c: LayerConfig,
  owners: readonly RankOwnership[],
  names: readonly WeightName[],
  outs: readonly Pick<RankOutput, 'rank' | 'grads'>[],
): Partial<Record<WeightName, Float32Array>> {
  const D = localDims(c);
  const grads: Partial<Record<WeightName, Float32Array>> = {};
  for (const name of names) {
    const shape = logicalShape(c, name);
    const logical = new Float32Array(numel(shape));
    for (const o of [...outs].sort((a, b) => b.rank - a.rank)) {
      const g = o.grads[name];
      if (!g) throw new Error(`gatherGrads: rank ${o.rank} returned no gradient for ${name}.`);
      placeShard(g, logical, shape, shardLayout(c, D, owners[o.rank], name));
    }
    grads[name] = logical;
  }
  return grads;
}

/**
 * Gathers every rank's results back to the logical layout: activations by token, gradients by
 * placing each shard into its blocks (every linear_qkv column has one owner, also when
 * groups < t). Replicated pieces (the RMSNorm gains) come from the lowest rank holding them.
 */
export function gatherLogical(
  c: LayerConfig,
  owners: readonly RankOwnership[],
  outs: readonly RankOutput[],
): LogicalOutput {
  const byRank = [...outs].sort((a, b) => a.rank - b.rank);
  const grads = gatherGrads(c, owners, weightsOf(c), byRank);
  const dxs = byRank.map((o) => o.dx);
  return {
    y: tokens(
      c,
      byRank.map((o) => o.y),
    ),
    loss: byRank[0].loss,
    dx: dxs.every((d): d is Float32Array => !!d) ? tokens(c, dxs) : undefined,
    grads,
  };
}
