import { expect } from 'vitest';
import { requestKernelDevice } from '../../src/kernels/adapter.ts';
import { KernelContext } from '../../src/kernels/context.ts';
import { createTensor, readTensor, type GpuTensor } from '../../src/kernels/tensor.ts';
import { compareArrays } from '../../src/reference/compare.ts';

let shared: Promise<GPUDevice> | undefined;

/** One device for a test file (requested once; fails loudly when WebGPU is missing). */
export function testDevice(): Promise<GPUDevice> {
  shared ??= requestKernelDevice('GPU tests').then(({ device }) => device);
  return shared;
}

/**
 * Runs `body` with a fresh KernelContext inside validation and out-of-memory error scopes and
 * fails the test on any error the GPU reports (a kernel that silently failed validation would
 * otherwise read back zeros).
 */
export async function gpuCase<T>(body: (ctx: KernelContext) => Promise<T>): Promise<T> {
  const device = await testDevice();
  device.pushErrorScope('out-of-memory');
  device.pushErrorScope('validation');
  const ctx = new KernelContext(device);
  let result: T;
  try {
    result = await body(ctx);
    await ctx.flush();
  } finally {
    // Pop both scopes even when the body failed, so a GPU error is reported as one (and the
    // scopes never leak into the next case).
    const validation = await device.popErrorScope();
    const oom = await device.popErrorScope();
    expect(validation?.message ?? null, 'WebGPU validation error').toBeNull();
    expect(oom?.message ?? null, 'WebGPU out-of-memory error').toBeNull();
  }
  return result;
}

/** Uploads `data` as a tensor named `name` of `shape`. */
export function upload(ctx: KernelContext, name: string, shape: readonly number[], data: Float32Array): GpuTensor {
  return createTensor(ctx.device, name, shape, data);
}

/** Reads a tensor back after flushing the encoded work. */
export async function download(ctx: KernelContext, t: GpuTensor): Promise<Float32Array> {
  await ctx.flush();
  return readTensor(ctx.device, t);
}

/** Asserts |actual − expected| ≤ tol everywhere, reporting the worst element. */
export function expectClose(what: string, actual: Float32Array, expected: ArrayLike<number>, tol: number): void {
  const s = compareArrays(actual, expected);
  expect(s.nonFinite, `${what}: non-finite values`).toBe(0);
  expect(
    s.maxAbs,
    `${what}: max abs error ${s.maxAbs} at ${s.worstIndex} (got ${actual[s.worstIndex]}, want ${expected[s.worstIndex]}), tolerance ${tol}`,
  ).toBeLessThanOrEqual(tol);
}
