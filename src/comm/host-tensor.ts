import { formatShape, numel } from '../core/shape.ts';

/** A float32 tensor in host memory, row-major (last dim contiguous). */
export interface HostTensor {
  readonly shape: readonly number[];
  readonly data: Float32Array;
}

/** Wraps `data` as a tensor of `shape`; throws when numel(shape) ≠ data.length. */
export function hostTensor(shape: readonly number[], data: Float32Array = new Float32Array(numel(shape))): HostTensor {
  if (data.length !== numel(shape)) {
    throw new Error(`hostTensor: shape ${formatShape(shape)} holds ${numel(shape)} values, got ${data.length}.`);
  }
  return { shape: [...shape], data };
}
