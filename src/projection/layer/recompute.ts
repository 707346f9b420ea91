import { defaultRecomputeModules } from '../../megatron/recompute-modules.ts';
import type { Recompute } from '../../megatron/training-setup.ts';

/**
 * One transformer layer's activations for one micro-batch on one rank, bytes at the training
 * dtype (from activationTerms): `full` all it keeps, `coreAttention` the part only core attention
 * keeps (the b·nq·s² probabilities; with flash attention the fp32 log-sum-exp b·nq·s instead),
 * `input` the layer's input [s/t or s, b, h] (a full-recompute checkpoint).
 */
export interface LayerActivations {
  readonly full: number;
  readonly coreAttention: number;
  readonly input: number;
  /** What the dense MLP keeps inside it (fc1's and the activation's outputs), dropped by --recompute-modules mlp. */
  readonly mlp: number;
  /** The two norms' outputs the linears after them keep, dropped by --recompute-modules layernorm (0 where the norm is fused into the linear). */
  readonly normOutputs: number;
}

/** What a model chunk of n layers keeps, holds again in backward, and runs again, under a policy. */
export interface ChunkRecompute {
  /** Kept from the chunk's forward to its backward, per micro-batch. */
  readonly keptBytes: number;
  /** Held only while the chunk's backward recomputes (one recompute unit's activations). */
  readonly backwardTransientBytes: number;
  /** Layers whose whole forward runs again in backward (full recomputation). */
  readonly recomputedLayers: number;
  /** Layers whose core attention forward runs again (selective recomputation). */
  readonly recomputedCoreAttention: number;
  /** Layers whose dense MLP forward, and whose two norms' forwards, run again (--recompute-modules mlp, layernorm). */
  readonly recomputedMlp?: number;
  readonly recomputedNorms?: number;
  /** MoE layers whose --recompute-modules moe / moe_act / shared_experts run again (moe-step.ts moeRecomputeOf). */
  readonly recomputedMoeModules?: number;
}

/**
 * Megatron-Core's policies (transformer_block.py _checkpointed_forward, core_v0.19.0; Korthikanti
 * et al. 2022 §5) on a chunk of n layers with per-layer activations `a`:
 * none: keeps n·full · selective: keeps n·(full − what its modules drop: coreAttention for core_attn,
 * mlp, normOutputs for layernorm), recomputes those modules' forwards n times ·
 * full uniform k: one checkpoint per k consecutive layers, keeps ⌈n/k⌉·input, recomputes n layers,
 * holds min(k, n)·full while a unit's backward runs · full block k: the first j = min(k, n) layers
 * each checkpointed, keeps j·input + (n − j)·full, recomputes j layers, holds one layer's full.
 */
export function chunkRecompute(n: number, a: LayerActivations, r: Recompute | undefined): ChunkRecompute {
  if (!r) return { keptBytes: n * a.full, backwardTransientBytes: 0, recomputedLayers: 0, recomputedCoreAttention: 0 };
  if (r.granularity === 'selective') {
    const on = new Set(r.modules ?? defaultRecomputeModules);
    const core = on.has('core_attn') ? a.coreAttention : 0;
    const mlp = on.has('mlp') ? a.mlp : 0;
    const norms = on.has('layernorm') ? a.normOutputs : 0;
    return {
      keptBytes: n * (a.full - core - mlp - norms),
      // One module is recomputed at a time, just before its backward: the largest is the transient.
      backwardTransientBytes: n > 0 ? Math.max(core, mlp, norms) : 0,
      recomputedLayers: 0,
      recomputedCoreAttention: on.has('core_attn') ? n : 0,
      recomputedMlp: on.has('mlp') ? n : 0,
      recomputedNorms: norms > 0 ? n : 0,
    };
  }
  if (r.method === 'uniform')
    return {
      keptBytes: Math.ceil(n / r.layers) * a.input,
      backwardTransientBytes: Math.min(r.layers, n) * a.full,
      recomputedLayers: n,
      recomputedCoreAttention: 0,
    };
  const j = Math.min(r.layers, n);
  return {
    keptBytes: j * a.input + (n - j) * a.full,
    backwardTransientBytes: j > 0 ? a.full : 0,
    recomputedLayers: j,
    recomputedCoreAttention: 0,
  };
}
