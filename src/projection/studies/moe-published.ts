import { systems } from '../../hardware/systems.ts';
import { moePublishedStepS, type MoePublishedRun } from '../../megatron/moe-published-runs.ts';
import type { TrainingSetup } from '../../megatron/training-setup.ts';
import { defaultKernelOptions } from '../layer/kernel-options.ts';
import type { Machine } from '../layer/projected-layer.ts';
import { projectStep, type StepProjection } from '../step/cluster-projection.ts';

/**
 * A published MoE run as the projection takes it: the Model Zoo's flags (model_configs/benchmarking/*.yaml:
 * --sequence-parallel, --use-distributed-optimizer, --overlap-grad-reduce, --overlap-param-gather,
 * --use-flash-attn, --cross-entropy-loss-fusion, --untie-embeddings-and-output-weights, RMSNorm,
 * SwiGLU, bf16) on DGX H100 with Transformer Engine's fused attention (cuDNN's on Hopper) and the
 * fused loss (read in 16 bits: the plan's cross entropy).
 */
export function moePublishedSetup(run: MoePublishedRun): { setup: TrainingSetup; machine: Machine } {
  const m = run.model;
  const setup: TrainingSetup = {
    sizes: {
      s: m.s,
      b: run.microBatch,
      h: m.h,
      heads: m.heads,
      groups: m.groups,
      ffn: m.ffn,
      vocab: m.vocab,
      ...(m.kvChannels !== undefined && { kvChannels: m.kvChannels }),
    },
    tp: run.tp,
    sp: run.tp > 1,
    layers: run.pricedLayers ?? m.layers,
    gpus: run.gpus,
    globalBatch: run.globalBatch,
    overlap: true,
    pp: run.pp,
    vpp: run.vpp,
    distributedOptimizer: true,
    overlapGradReduce: true,
    overlapParamGather: true,
    flashAttention: true,
    tiedEmbeddings: false,
    moe: run.moe,
  };
  const machine: Machine = {
    system: systems[run.system],
    dtype: run.dtype,
    kernels: {
      ...defaultKernelOptions,
      attentionBackend: 'fused',
      fp8: run.fp8 ? 'hybrid' : 'none',
      crossEntropy: 'plan',
    },
  };
  return { setup, machine };
}

/** One published MoE run against its projection. */
export interface MoePublishedComparison {
  readonly run: MoePublishedRun;
  readonly publishedStepS: number;
  readonly projected: StepProjection;
  /** projected step / published step − 1 (positive: the projection is slower). */
  readonly stepError: number;
}

/** Projects a published MoE run (nothing fitted to it). */
export async function compareMoePublished(run: MoePublishedRun): Promise<MoePublishedComparison> {
  const { setup, machine } = moePublishedSetup(run);
  const projected = await projectStep(setup, machine);
  const publishedStepS = moePublishedStepS(run);
  return { run, publishedStepS, projected, stepError: projected.stepMs / 1e3 / publishedStepS - 1 };
}
