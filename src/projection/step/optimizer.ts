import type { TrainDtype } from '../../hardware/dtype.ts';
import type { GpuSpec } from '../../hardware/gpus.ts';
import { memoryBoundUs } from '../../hardware/kernel-time.ts';
import { stateBytes } from '../links/data-parallel.ts';

/**
 * The Adam update of the busiest stage's parameters P on one GPU (memory-bound), ms: its shard
 * P/d with the distributed optimizer (d = DP · cp), reading and writing the main weights and
 * moments and the weights, reading the gradients: memoryBoundUs(P' · (2·(o + w) + g)) / 1e3
 * with o, w, g the optimizer, weight and gradient bytes per parameter (unsharded).
 *
 * `quantizedParams[i]`: those of stage i's parameters held quantized (--fp8-param-gather,
 * --fp4-param-gather). Megatron keeps no 16-bit copy of them: _copy_main_params_to_model_params
 * skips their `shard_model_param.copy_(shard_main_param)` (distrib_optimizer.py:2868-2874,
 * core_v0.19.0) and writes them in quantize_param_shard / quantize_nvfp4_param_shard (:2815-2847),
 * or MXFP8's copy into the bf16 buffer (:2894-2925), both priced as the master cast
 * (quantized-params.ts weightCastOf). They take 2·o + g; the stage's time is its own
 * P'·(2·(o + w) + g) − Q'·2·w, the largest over stages.
 */
export function optimizerMs(
  stageParams: readonly number[],
  distributedOptimizer: boolean,
  dpGroup: number,
  dtype: TrainDtype,
  gpu: GpuSpec,
  quantizedParams: readonly number[] = [],
): number {
  const base = stateBytes(dtype, false, 1);
  const shard = (p: number): number => (distributedOptimizer ? p / dpGroup : p);
  const bytes = Math.max(
    ...stageParams.map(
      (p, i) =>
        shard(p) * (2 * (base.optimizer + base.weights) + base.grads) -
        shard(Math.min(p, quantizedParams[i] ?? 0)) * 2 * base.weights,
    ),
  );
  return memoryBoundUs(bytes, gpu) / 1e3;
}
