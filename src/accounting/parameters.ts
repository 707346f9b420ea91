import { numel } from '../core/shape.ts';
import { localDims } from '../parallel/dims.ts';
import type { LayerPlan } from '../parallel/plan-types.ts';
import type { WeightName } from '../parallel/weight-names.ts';
import { shardLayout, weightsOf } from '../parallel/weights.ts';

/** Bytes per element: the playground keeps parameters, gradients and activations in float32. */
export const bytesPerElement = 4;

/** One weight tensor as rank r holds it. */
export interface ParameterShard {
  /** "qkv", "proj", "gate", "up", "down", "norm1", "norm2", "embedding", "output" (see shownAs). */
  readonly name: string;
  /** The parameter it is (of src/parallel/weight-names.ts), or a column half of it (gate, up of wfc1). */
  readonly weight: WeightName;
  /** Local shape on this rank. */
  readonly shape: readonly number[];
  /** numel(shape)·4. */
  readonly bytes: number;
  /** Whole copy on every rank (norm weights) rather than a shard. */
  readonly replicated: boolean;
}

/**
 * How the weights table shows each parameter, in layer order, by Megatron's module names; wfc1's
 * shard [h, 2f] shows as its two column halves gate and up. Keyed by WeightName: a parameter
 * added there without a row here does not compile, and the shapes come from shardLayout, the
 * layout the ranks are cut by.
 */
const shownAs: { readonly [K in WeightName]: { readonly names: readonly string[]; readonly replicated?: true } } = {
  emb: { names: ['embedding'] },
  g1: { names: ['norm1'], replicated: true },
  wqkv: { names: ['qkv'] },
  wo: { names: ['proj'] },
  g2: { names: ['norm2'], replicated: true },
  wfc1: { names: ['gate', 'up'] },
  wdown: { names: ['down'] },
  wout: { names: ['output'] },
};

/**
 * The weights rank r holds, each with its local shape from shardLayout (t = TP degree, d = h/heads,
 * nq = local query heads, f = local FFN columns, vl = local rows of the padded vocabulary):
 * qkv [h, W/t], W = (heads + 2·groups)·d — linear_qkv's even column split, (nq + 2·groups/t)·d when
 * groups ≥ t, and with groups < t a slice of the per-group interleaved columns owned by this rank
 * alone (Megatron-Core since core_v0.16: nothing replicated, Σ_r = W) · proj [nq·d, h] ·
 * gate, up [h, f] · down [f, h] · norm1, norm2 [h] (replicated) · embedding [vl, h] and
 * output [h, vl] (untied; only with a vocabulary).
 */
export function parameterShards(plan: Pick<LayerPlan, 'config' | 'ranks'>, rank: number): ParameterShard[] {
  const c = plan.config;
  const own = plan.ranks[rank];
  const dims = localDims(c);
  const held = new Set(weightsOf(c));
  return (Object.keys(shownAs) as WeightName[])
    .filter((w) => held.has(w))
    .flatMap((weight) => {
      const { names, replicated = false } = shownAs[weight];
      const { shape } = shardLayout(c, dims, own, weight);
      const part = [...shape.slice(0, -1), shape[shape.length - 1] / names.length];
      return names.map((name) => ({ name, weight, shape: part, bytes: numel(part) * bytesPerElement, replicated }));
    });
}

/** Σ bytes of rank r's weights; gradients take the same (one float32 gradient per weight). */
export function parameterBytes(plan: Pick<LayerPlan, 'config' | 'ranks'>, rank: number): number {
  return parameterShards(plan, rank).reduce((a, p) => a + p.bytes, 0);
}
