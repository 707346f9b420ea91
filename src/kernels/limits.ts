import type { ComputeLimits } from '../core/compute-limits.ts';
import { formatShape, numel } from '../core/shape.ts';

/** Throws unless every dimension is a non-negative integer. */
export function checkDims(op: string, name: string, shape: readonly number[]): void {
  for (const d of shape) {
    if (!Number.isInteger(d) || d < 0) {
      throw new Error(
        `${op}: tensor "${name}" has shape ${formatShape(shape)}; every dimension must be a non-negative integer.`,
      );
    }
  }
}

/**
 * Throws when a float32 tensor of `shape` cannot be bound as one storage buffer on this device:
 * its bytes (4 per element) must not exceed maxStorageBufferBindingSize nor maxBufferSize.
 */
export function checkTensorFits(limits: ComputeLimits, op: string, name: string, shape: readonly number[]): void {
  checkDims(op, name, shape);
  const bytes = numel(shape) * 4;
  const limit = Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize);
  if (bytes > limit) {
    const which =
      limits.maxStorageBufferBindingSize <= limits.maxBufferSize ? 'maxStorageBufferBindingSize' : 'maxBufferSize';
    throw new Error(
      `${op}: tensor "${name}" of shape ${formatShape(shape)} needs ${bytes} bytes, more than this device's ` +
        `${which} of ${limit} bytes. Use smaller sizes or a larger TP degree so each shard fits.`,
    );
  }
}

/**
 * Throws when a dispatch of `counts` workgroups exceeds maxComputeWorkgroupsPerDimension in any
 * dimension; `what` names the dims, e.g. ["N/tileN", "M/tileM", "batch"].
 */
export function checkWorkgroups(
  limits: ComputeLimits,
  op: string,
  name: string,
  shape: readonly number[],
  counts: readonly [number, number, number],
  what: readonly [string, string, string],
): void {
  counts.forEach((c, i) => {
    if (c > limits.maxComputeWorkgroupsPerDimension) {
      throw new Error(
        `${op}: tensor "${name}" of shape ${formatShape(shape)} needs ${c} workgroups along ${what[i]}, more than ` +
          `this device's maxComputeWorkgroupsPerDimension of ${limits.maxComputeWorkgroupsPerDimension}. ` +
          'Use smaller sizes or a larger TP degree.',
      );
    }
  });
}

/** Throws unless `actual` equals `expected`, naming the tensor and why that shape is required. */
export function expectShape(
  op: string,
  name: string,
  actual: readonly number[],
  expected: readonly number[],
  why = '',
): void {
  const same = actual.length === expected.length && actual.every((d, i) => d === expected[i]);
  if (!same) {
    throw new Error(
      `${op}: tensor "${name}" has shape ${formatShape(actual)} but ${formatShape(expected)} is required${why ? ` (${why})` : ''}.`,
    );
  }
}
