import { layoutMoe, type ClusterModel, type ParallelLayout } from '../../megatron/parallel-layout.ts';
import type { TrainingSetup } from '../../megatron/training-setup.ts';

/** A layout as the projection takes it, and each flag the projection cannot express yet. */
export interface LayoutSetup {
  readonly setup: TrainingSetup;
  /** The kernel option the layout sets: --tp-comm-overlap, which runs only under SP (KernelOptions.tpCommOverlap). */
  readonly tpCommOverlap: boolean;
  /** Each flag the step model leaves out, and why. */
  readonly unexpressed: readonly Unexpressed[];
}

/** A Megatron flag the step model cannot express, and why. */
export interface Unexpressed {
  readonly flag: string;
  readonly reason: string;
}

/** Kernel and weight choices that are not part of a layout (flash attention, tied embeddings). */
export type SetupExtras = Pick<TrainingSetup, 'flashAttention' | 'tiedEmbeddings' | 'mla'>;

/**
 * Maps a Megatron layout of `model` on N GPUs at `globalBatch` flag by flag onto the projection's
 * TrainingSetup: t, p, v, cp, b, SP, recompute (full: uniform, one layer per checkpoint;
 * selective: core attention), the distributed optimizer and the gradient and parameter overlaps;
 * --tp-comm-overlap is a kernel option (`tpCommOverlap`, for the machine's KernelOptions).
 * The async dgrad all-reduce (the plan's overlap) is on, as Megatron runs it. What the step model
 * does not express is listed, never silently dropped.
 */
export function layoutSetup(
  model: ClusterModel,
  l: ParallelLayout,
  gpus: number,
  globalBatch: number,
  extras: SetupExtras = {},
): LayoutSetup {
  const unexpressed: Unexpressed[] = [];
  if (l.tpCommOverlap && !l.sp)
    unexpressed.push({
      flag: '--tp-comm-overlap',
      reason: 'it needs --sequence-parallel (Megatron asserts it)',
    });
  const setup: TrainingSetup = {
    sizes: { ...model.sizes, b: l.microBatch },
    tp: l.tp,
    sp: l.sp,
    layers: model.layers,
    gpus,
    globalBatch,
    overlap: true,
    pp: l.pp,
    vpp: l.vpp,
    cp: l.cp,
    ...(l.recompute === 'full' && { recomputation: { granularity: 'full', method: 'uniform', layers: 1 } }),
    ...(l.recompute === 'selective' && {
      recomputation: { granularity: 'selective', ...(l.recomputeModules && { modules: l.recomputeModules }) },
    }),
    distributedOptimizer: l.distributedOptimizer,
    overlapGradReduce: l.overlapGradReduce,
    overlapParamGather: l.overlapParamGather,
    ...(model.moe && { moe: layoutMoe(model, l) }),
    ...(l.fsdp && { fsdp: l.fsdp }),
    ...extras,
  };
  return { setup, tpCommOverlap: l.tpCommOverlap && l.sp, unexpressed };
}
