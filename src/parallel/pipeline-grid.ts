import { pipelineScheduleNames, type PipelineScheduleName } from '../mesh/pipeline-schedules.ts';
import { configDefaults, configFromPreset } from './config.ts';
import { dpSyncModes, type DpSyncMode } from './dp-options.ts';
import type { PipelineModel } from './pipeline-model.ts';
import type { PipelineTraining } from './pipeline-oracle.ts';

/** One point of the grid the pipeline on the ranks is checked over against one device. */
export interface PipelineGridPoint {
  readonly schedule: PipelineScheduleName;
  readonly tp: number;
  readonly pp: number;
  readonly dp: number;
  /** How the d replicas synchronise; at d = 1 still the path the ranks run (a one-rank reduce-scatter, Adam on the whole shard). */
  readonly sync: DpSyncMode;
}

/**
 * Every schedule (afab, 1f1b, interleaved with v = 2, zb-h1) × t {1, 2} × p {2, 4} × d {1, 2} ×
 * {all-reduce, distributed optimizer}: 64 points on t·p·d ≤ 16 ranks (issue 39's done-when).
 */
export const pipelineGrid: readonly PipelineGridPoint[] = pipelineScheduleNames.flatMap((schedule) =>
  [1, 2].flatMap((tp) =>
    [2, 4].flatMap((pp) => [1, 2].flatMap((dp) => dpSyncModes.map((sync) => ({ schedule, tp, pp, dp, sync })))),
  ),
);

/** The sizes every grid point runs at: L blocks, m micro-batches per replica, the seed. */
export interface PipelineGridSizes {
  readonly layers: number;
  readonly m: number;
  readonly seed: number;
}

/**
 * The grid's default sizes, the smallest that keep every point honest: L = 8 = p·v at p 4 × v 2 (every
 * virtual stage holds a block; at p 2 each stage accumulates several blocks' gradients), m = 4 (a
 * multiple of p = 4 as interleaved needs, and m ≥ p so 1F1B and ZB-H1 reach their steady state).
 */
export const pipelineGridDefaults: PipelineGridSizes = { layers: 8, m: 4, seed: configDefaults.seed };

/** A point's model: L classroom-sized blocks (s 8, h 16, FFN 32, vocab 32) at the point's t, v = 2 under interleaved (else 1). */
export function pipelineGridModel(pt: PipelineGridPoint, z: PipelineGridSizes): PipelineModel {
  return {
    layer: configFromPreset('classroom', { tp: pt.tp, seed: z.seed }),
    layers: z.layers,
    p: pt.pp,
    v: pt.schedule === 'interleaved' ? 2 : 1,
    m: z.m,
    schedule: pt.schedule,
  };
}

/**
 * Two Adam steps, the second's weights checked: Megatron's β1 0.9 and β2 0.999; lr 1e-2 and ε 1e-2 keep
 * the update Lipschitz in the gradient (pipeline-oracle.ts weightTolerance), as the pipeline GPU tests.
 */
export const pipelineGridTraining: PipelineTraining = {
  steps: 2,
  adam: { lr: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-2 },
};
