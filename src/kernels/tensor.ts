import { checkTensorFits } from './limits.ts';
import { numel } from '../core/shape.ts';
import { stagingPool } from './staging-pool.ts';
import { pause } from '../core/pause.ts';

/** A float32 tensor in one GPU buffer, row-major (last dim contiguous), named for error messages. */
export interface GpuTensor {
  readonly name: string;
  readonly shape: readonly number[];
  readonly buffer: GPUBuffer;
}

const storageUsage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

/**
 * Allocates a float32 tensor of `shape` (zeros, or `data` when given) after checking it fits
 * the device's binding limits. Buffers are at least 4 bytes, so empty tensors stay bindable.
 */
export function createTensor(
  device: GPUDevice,
  name: string,
  shape: readonly number[],
  data?: Float32Array,
): GpuTensor {
  checkTensorFits(device.limits, 'createTensor', name, shape);
  const n = numel(shape);
  if (data && data.length !== n) {
    throw new Error(
      `createTensor: tensor "${name}" of shape [${shape.join(', ')}] needs ${n} values, got ${data.length}.`,
    );
  }
  const buffer = device.createBuffer({ label: name, size: Math.max(4, n * 4), usage: storageUsage });
  if (data && n > 0) device.queue.writeBuffer(buffer, 0, data.buffer, data.byteOffset, data.byteLength);
  return { name, shape: [...shape], buffer };
}

/** Overwrites a tensor's contents with `data` (numel values). */
export function writeTensor(device: GPUDevice, t: GpuTensor, data: Float32Array): void {
  const n = numel(t.shape);
  if (data.length !== n) throw new Error(`writeTensor: tensor "${t.name}" holds ${n} values, got ${data.length}.`);
  if (n > 0) device.queue.writeBuffer(t.buffer, 0, data.buffer, data.byteOffset, data.byteLength);
}

/**
 * Copies elements [lo, hi) of a tensor into a pooled read-back buffer and maps it (waits for all
 * work submitted before it), `mapAfterMs` after submitting the copy (GpuCollectiveOptions.mapAfterMs
 * says why a pause can make the map return sooner). The caller reads `mapped(buffer, hi − lo)` and
 * then gives the buffer back with `stagingPool(device).release(buffer)`.
 */
export async function readBackRange(
  device: GPUDevice,
  t: GpuTensor,
  lo: number,
  hi: number,
  mapAfterMs = 0,
): Promise<GPUBuffer> {
  const staging = issueReadBack(device, t, [[lo, hi - lo]]);
  await mapReadBacks([staging], [(hi - lo) * 4], mapAfterMs)[0];
  return staging;
}

/**
 * Maps read-back buffers whose copies were just submitted (bytes[k] of staging[k]), all
 * `mapAfterMs` later, or at once in this task when it is 0 (GpuCollectiveOptions.mapAfterMs says
 * why a pause can make the maps return sooner).
 */
export function mapReadBacks(
  staging: readonly GPUBuffer[],
  bytes: readonly number[],
  mapAfterMs: number,
): Promise<void>[] {
  const map = (k: number): Promise<void> => staging[k].mapAsync(GPUMapMode.READ, 0, bytes[k]);
  if (mapAfterMs === 0) return staging.map((_, k) => map(k));
  const copied = pause(mapAfterMs);
  return staging.map((_, k) => copied.then(() => map(k)));
}

/**
 * Submits the copy of runs of `t` (each [at, length] in elements) into one pooled read-back buffer
 * (not yet mapped), one after another from its start; e.g. [[lo, hi − lo]] for elements [lo, hi).
 */
export function issueReadBack(
  device: GPUDevice,
  t: GpuTensor,
  runs: readonly (readonly [number, number])[],
): GPUBuffer {
  const bytes = runs.reduce((s, [, len]) => s + len, 0) * 4;
  const staging = stagingPool(device).acquireRead(bytes);
  const enc = device.createCommandEncoder();
  let to = 0;
  for (const [at, len] of runs) {
    enc.copyBufferToBuffer(t.buffer, at * 4, staging, to, len * 4);
    to += len * 4;
  }
  device.queue.submit([enc.finish()]);
  return staging;
}

/** The first `n` float32 of a mapped staging buffer, as a view (valid until it is unmapped). */
export function mappedFloats(staging: GPUBuffer, n: number): Float32Array {
  return new Float32Array(staging.getMappedRange(0, n * 4));
}

/**
 * Copies a tensor back and lends `use` the mapped bytes without a host copy (waits for all work
 * submitted before it; maps `mapAfterMs` after the copy, as readBackRange); the view is invalid
 * once `use` settles, when the pooled staging buffer goes back to the device's pool.
 */
export async function withMappedTensor<T>(
  device: GPUDevice,
  t: GpuTensor,
  use: (data: Float32Array) => Promise<T>,
  mapAfterMs = 0,
): Promise<T> {
  const n = numel(t.shape);
  if (n === 0) return use(new Float32Array(0));
  const staging = await readBackRange(device, t, 0, n, mapAfterMs);
  try {
    return await use(mappedFloats(staging, n));
  } finally {
    stagingPool(device).release(staging);
  }
}

/**
 * Copies a tensor back to the CPU into a new array (waits for all work submitted before it; maps
 * `mapAfterMs` after the copy, as readBackRange).
 */
export async function readTensor(device: GPUDevice, t: GpuTensor, mapAfterMs = 0): Promise<Float32Array> {
  return withMappedTensor(device, t, async (data) => data.slice(), mapAfterMs);
}
