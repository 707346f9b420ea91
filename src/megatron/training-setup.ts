import { configDefaults, type LayerConfig, type ModelSizes } from '../parallel/config.ts';
import { validateConfig } from '../parallel/validate.ts';

/** What a training run on a real cluster is: the layer's sizes, degrees, depth, budget and batch. */
export interface TrainingSetup {
  readonly sizes: ModelSizes;
  readonly tp: number;
  readonly sp: boolean;
  /** L: transformer blocks; the embedding, output layer and loss come once. */
  readonly layers: number;
  /** N: GPUs in all; DP = N / t. */
  readonly gpus: number;
  /**
   * Sequences per step over all replicas (Megatron --global-batch-size); each replica runs
   * m = global / (b · DP) micro-batches of b = sizes.b sequences (gradient accumulation), so the
   * batch means the same at every t (seed M039: fixed global batch at a fixed GPU budget).
   */
  readonly globalBatch: number;
  /** Megatron's async dgrad all-reduce under wgrad (the plan's overlap option). */
  readonly overlap: boolean;
  /**
   * Full activation recomputation (Megatron --recompute-granularity full, uniform, 1 layer per
   * checkpoint): each block keeps only its input and runs its forward again in backward.
   */
  readonly recompute?: boolean;
}

/** The configuration of a setup (throws with the validation message when illegal). */
export function setupConfig(s: TrainingSetup): LayerConfig {
  const c: LayerConfig = { ...configDefaults, ...s.sizes, tp: s.tp, sp: s.sp && s.tp > 1 };
  const v = validateConfig(c);
  if (!v.ok) throw new Error(v.errors.map((e) => e.message).join(' '));
  if (!(Number.isInteger(s.layers) && s.layers >= 1))
    throw new Error(`layers (${s.layers}) must be a whole number ≥ 1.`);
  if (!(Number.isInteger(s.gpus) && s.gpus >= 1 && s.gpus % s.tp === 0))
    throw new Error(`the GPU budget N (${s.gpus}) must be a multiple of t (${s.tp}): DP = N/t.`);
  microBatchesOf(s);
  return c;
}

/** m = global batch / (b · DP), or an error naming a global batch that divides. */
export function microBatchesOf(s: TrainingSetup): number {
  const per = s.sizes.b * (s.gpus / s.tp);
  const m = s.globalBatch / per;
  if (!(Number.isInteger(m) && m >= 1))
    throw new Error(
      `the global batch (${s.globalBatch} sequences) must be a multiple of b·DP = ${s.sizes.b}·${s.gpus / s.tp} = ${per}.`,
    );
  return m;
}
