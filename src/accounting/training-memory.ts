import type { LayerPlan } from '../parallel/plan-types.ts';
import { activationBytes } from './activations.ts';
import { dtypeBytes, type TrainDtype } from '../hardware/dtype.ts';
import { bytesPerElement, parameterBytes } from './parameters.ts';

/**
 * Bytes per parameter of mixed-precision Adam as Megatron-LM keeps them without the distributed
 * optimizer (Megatron-Core docs, "Distributed Optimizer": fp16 params + fp16 grads 20 B,
 * bf16 params + fp32 grads 18 B, fp32 16 B):
 * - fp16: weights 2, gradients 2, then fp32 main weights 4, fp32 main gradients 4, Adam m 4, v 4;
 * - bf16: weights 2, fp32 gradient buffer 4 (gradients accumulate in fp32), main weights 4, m 4, v 4;
 * - fp32: weights 4, gradients 4, m 4, v 4 (the weights are the main weights).
 */
export const stateBytesPerParam: Readonly<Record<TrainDtype, { weights: number; grads: number; optimizer: number }>> = {
  fp16: { weights: 2, grads: 2, optimizer: 16 },
  bf16: { weights: 2, grads: 4, optimizer: 12 },
  fp32: { weights: 4, grads: 4, optimizer: 8 },
};

/**
 * Full recomputation keeps each block's input only: [s/t, b, h] under SP, [s, b, h] without
 * (Korthikanti et al. 2022, §5: 2sbh bytes per layer in 16 bits); the block being recomputed
 * holds its full set again, which the `full` plan's count already covers once.
 */
function checkpointElements(block: LayerPlan): number {
  const own = block.ranks[0]!;
  return (own.tokens[1] - own.tokens[0]) * block.config.b * block.config.h;
}

/** One GPU's training memory, bytes. */
export interface GpuMemory {
  /** Parameters this GPU holds (its TP shard of its pipeline stage's layers, embedding and output). */
  readonly params: number;
  readonly weightBytes: number;
  readonly gradBytes: number;
  readonly optimizerBytes: number;
  /**
   * Activations: gpuMemory counts one micro-batch through all L layers; projectStep counts what is
   * live at the peak beside the states (in-flight micro-batches and transients).
   */
  readonly activationBytes: number;
  /** gpuMemory: the sum; projectStep: the peak over the step's live intervals (src/projection/pipeline/memory-timeline.ts). */
  readonly totalBytes: number;
  readonly capacityBytes: number;
  /** totalBytes > capacity. */
  readonly oom: boolean;
}

/**
 * A sum-of-parts bound (states + one micro-batch through all layers), without a schedule; the
 * cluster projection uses the peak over live intervals instead (src/projection/pipeline/memory-timeline.ts).
 * Memory of rank 0 for a model of `layers` blocks: `full` is the plan with embedding, output and
 * loss (one block inside), `block` one block alone; so L layers = full + (L − 1)·block. Weights
 * and activations are counted from the plans' own tables (parameters.ts, activations.ts, kept in
 * float32 there: elements = bytes/4, then re-priced at `dtype`; K and V repeated to the query heads
 * as Megatron's local spec keeps them); with `recompute`, blocks keep
 * only their input (checkpointElements). Workspace, allocator
 * fragmentation and the CUDA context are not counted.
 */
export function gpuMemory(
  full: LayerPlan,
  block: LayerPlan,
  layers: number,
  dtype: TrainDtype,
  capacityGiB: number,
  recompute = false,
): GpuMemory {
  const params = (parameterBytes(full, 0) + (layers - 1) * parameterBytes(block, 0)) / bytesPerElement;
  // K and V as Megatron's local spec keeps them, repeated to the query heads (activations.ts).
  const perBlock = recompute ? checkpointElements(block) : activationBytes(block, 0, 'heads') / bytesPerElement;
  const actElements = activationBytes(full, 0, 'heads') / bytesPerElement + (layers - 1) * perBlock;
  const per = stateBytesPerParam[dtype];
  const weightBytes = params * per.weights;
  const gradBytes = params * per.grads;
  const optimizerBytes = params * per.optimizer;
  const act = actElements * dtypeBytes[dtype];
  const totalBytes = weightBytes + gradBytes + optimizerBytes + act;
  const capacityBytes = capacityGiB * 2 ** 30;
  return {
    params,
    weightBytes,
    gradBytes,
    optimizerBytes,
    activationBytes: act,
    totalBytes,
    capacityBytes,
    oom: totalBytes > capacityBytes,
  };
}
