import type { TrainDtype } from '../hardware/dtype.ts';

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

/** One GPU's training memory, bytes. */
export interface GpuMemory {
  /** Parameters this GPU holds (its TP shard of its pipeline stage's layers, embedding and output). */
  readonly params: number;
  readonly weightBytes: number;
  readonly gradBytes: number;
  readonly optimizerBytes: number;
  /** Live at the peak beside the states: activations of the in-flight micro-batches and transients. */
  readonly activationBytes: number;
  /** The peak over the step's live intervals (src/projection/memory-timeline.ts). */
  readonly totalBytes: number;
  readonly capacityBytes: number;
  /** totalBytes > capacity. */
  readonly oom: boolean;
}
