import { checkTensorFits } from './limits.ts';
import { numel } from '../core/shape.ts';

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
 * Copies a tensor back and lends `use` the mapped bytes without a host copy (waits for all work
 * submitted before it); the view is invalid once `use` settles, when the staging buffer is freed.
 */
export async function withMappedTensor<T>(
  device: GPUDevice,
  t: GpuTensor,
  use: (data: Float32Array) => Promise<T>,
): Promise<T> {
  const n = numel(t.shape);
  if (n === 0) return use(new Float32Array(0));
  const staging = device.createBuffer({ size: n * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  try {
    const enc = device.createCommandEncoder();
    enc.copyBufferToBuffer(t.buffer, 0, staging, 0, n * 4);
    device.queue.submit([enc.finish()]);
    await staging.mapAsync(GPUMapMode.READ);
    return await use(new Float32Array(staging.getMappedRange()));
  } finally {
    staging.destroy();
  }
}

/** Copies a tensor back to the CPU (waits for all work submitted before it). */
export async function readTensor(device: GPUDevice, t: GpuTensor): Promise<Float32Array> {
  const n = numel(t.shape);
  if (n === 0) return new Float32Array(0);
  const staging = device.createBuffer({ size: n * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(t.buffer, 0, staging, 0, n * 4);
  device.queue.submit([enc.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const out = new Float32Array(staging.getMappedRange().slice(0));
  staging.destroy();
  return out;
}
