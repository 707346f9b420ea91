import type { TrainDtype } from '../../hardware/dtype.ts';
import type { GpuSpec } from '../../hardware/gpus.ts';
import { memoryBoundUs } from '../../hardware/kernel-time.ts';
import { stateBytes } from '../links/data-parallel.ts';

/**
 * The Adam update of the busiest stage's parameters P on one GPU (memory-bound), ms: its shard
 * P/d with the distributed optimizer (d = DP · cp), reading and writing the main weights and
 * moments and the weights, reading the gradients: memoryBoundUs(P' · (2·(o + w) + g)) / 1e3
 * with o, w, g the optimizer, weight and gradient bytes per parameter (unsharded).
 */
export function optimizerMs(
  stageParams: readonly number[],
  distributedOptimizer: boolean,
  dpGroup: number,
  dtype: TrainDtype,
  gpu: GpuSpec,
): number {
  const maxParams = Math.max(...stageParams);
  const shard = distributedOptimizer ? maxParams / dpGroup : maxParams;
  const base = stateBytes(dtype, false, 1);
  return memoryBoundUs(shard * (2 * (base.optimizer + base.weights) + base.grads), gpu) / 1e3;
}
