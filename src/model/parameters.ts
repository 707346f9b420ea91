import { numel } from '../core/shape.ts';
import { headDim } from '../parallel/config.ts';
import type { LayerPlan } from '../parallel/plan-types.ts';

/** Bytes per element: the playground keeps parameters, gradients and activations in float32. */
export const bytesPerElement = 4;

/** One weight tensor as rank r holds it. */
export interface ParameterShard {
  /** "qkv", "proj", "gate", "up", "down", "norm1", "norm2", "embedding", "output". */
  readonly name: string;
  /** Local shape on this rank. */
  readonly shape: readonly number[];
  /** numel(shape)·4. */
  readonly bytes: number;
  /** Whole copy on every rank (norm weights) rather than a shard. */
  readonly replicated: boolean;
}

/**
 * The weights rank r holds (t = TP degree, d = h/heads, nq = local query heads, f = local FFN
 * columns, vl = local rows of the padded vocabulary):
 * qkv [h, W/t] with W = (heads + 2·groups)·d — linear_qkv's even column split, which is
 * (nq + 2·groups/t)·d when groups ≥ t, and with groups < t a slice of the per-group interleaved
 * columns owned by this rank alone (Megatron-Core since core_v0.16: nothing replicated, Σ_r = W) ·
 * proj [nq·d, h] · gate, up [h, f] · down [f, h] · norm1, norm2 [h] (replicated) ·
 * embedding, output [vl, h] (untied; only with a vocabulary).
 */
export function parameterShards(plan: Pick<LayerPlan, 'config' | 'ranks'>, rank: number): ParameterShard[] {
  const c = plan.config;
  const own = plan.ranks[rank];
  const d = headDim(c);
  const h = c.h;
  const nq = own.heads[1] - own.heads[0];
  const f = own.ffn[1] - own.ffn[0];
  const vl = own.vocab[1] - own.vocab[0];
  const shard = (name: string, shape: number[], replicated = false): ParameterShard => ({
    name,
    shape,
    bytes: numel(shape) * bytesPerElement,
    replicated,
  });
  const out = [
    shard('norm1', [h], true),
    shard('qkv', [h, own.qkvCols[1] - own.qkvCols[0]]),
    shard('proj', [nq * d, h]),
    shard('norm2', [h], true),
    shard('gate', [h, f]),
    shard('up', [h, f]),
    shard('down', [f, h]),
  ];
  if (c.vocab > 0) out.unshift(shard('embedding', [vl, h]));
  if (c.vocab > 0) out.push(shard('output', [vl, h]));
  return out;
}

/** Σ bytes of rank r's weights; gradients take the same (one float32 gradient per weight). */
export function parameterBytes(plan: Pick<LayerPlan, 'config' | 'ranks'>, rank: number): number {
  return parameterShards(plan, rank).reduce((a, p) => a + p.bytes, 0);
}
