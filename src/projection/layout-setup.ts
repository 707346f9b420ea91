import type { ClusterModel, ParallelLayout } from '../megatron/parallel-layout.ts';
import type { TrainingSetup } from '../megatron/training-setup.ts';

/** A layout as the projection takes it, and each flag the projection cannot express yet. */
export interface LayoutSetup {
  readonly setup: TrainingSetup;
  /** One line per flag the step model leaves out ("--pipeline-model-parallel-size 4: …"). */
  readonly unexpressed: readonly string[];
}

/**
 * Maps a Megatron layout of `model` on N GPUs at `globalBatch` flag by flag onto the projection's
 * TrainingSetup. The async dgrad all-reduce (the plan's overlap) is on, as Megatron runs it. What
 * the step model does not express is listed, never silently dropped.
 */
export function layoutSetup(model: ClusterModel, l: ParallelLayout, gpus: number, globalBatch: number): LayoutSetup {
  const unexpressed: string[] = [];
  const no = (flag: string, why: string): void => {
    unexpressed.push(`${flag}: ${why}`);
  };
  if (l.pp > 1) no(`--pipeline-model-parallel-size ${l.pp}`, 'the step model has no pipeline stages');
  if (l.vpp > 1) no(`virtual stages ${l.vpp}`, 'the step model has no interleaved schedule');
  if (l.cp > 1) no(`--context-parallel-size ${l.cp}`, 'the step model has no context parallelism');
  if (l.recompute === 'selective')
    no('--recompute-granularity selective', 'the step model recomputes whole blocks or nothing');
  if (l.distributedOptimizer) no('--use-distributed-optimizer', 'the step model keeps full optimizer state per rank');
  if (l.overlapGradReduce) no('--overlap-grad-reduce', 'the step model reduces gradients after backward');
  if (l.overlapParamGather) no('--overlap-param-gather', 'the step model has no parameter all-gather');
  if (l.tpCommOverlap) no('--tp-comm-overlap', 'the step model overlaps only the async dgrad all-reduce');
  const setup: TrainingSetup = {
    sizes: { ...model.sizes, b: l.microBatch },
    tp: l.tp,
    sp: l.sp,
    layers: model.layers,
    gpus,
    globalBatch,
    overlap: true,
    recompute: l.recompute === 'full',
  };
  return { setup, unexpressed };
}
