import type { KernelContext } from '../../../../src/kernels/context.ts';
import type { GpuTensor } from '../../../../src/kernels/tensor.ts';
import { opSpec } from '../../../../src/parallel/backend.ts';
import { GpuBackend } from '../../../../src/ranks/backend-gpu.ts';
import type { KernelName } from '../../../../src/reference/kernel-registry.ts';
import { checkKernelShapes, writtenBindings, type KernelSpec } from '../../../../src/reference/kernel-spec.ts';

/** A tensor of a kernel case: its shape and float32 values (written bindings: their initial values). */
export interface CaseTensor {
  readonly shape: readonly number[];
  readonly data: Float32Array;
}

/**
 * Runs registered kernel `spec` through GpuBackend.kernel (the layer's one kernel path) on
 * `tensors` (binding order) and returns, for each written binding, the GPU's values and the
 * twin's float64 values from the same float32 inputs.
 */
export async function gpuAndTwin<A>(
  ctx: KernelContext,
  spec: KernelSpec<KernelName, A>,
  tensors: readonly CaseTensor[],
  args: A,
): Promise<{ gpu: Float32Array; twin: ArrayLike<number> }[]> {
  const be = new GpuBackend(ctx);
  const ts: GpuTensor[] = tensors.map((t, k) => be.tensor(spec.bindings[k].name, t.shape, t.data));
  be.kernel(opSpec(spec.name, 'replicated'), spec, ts, args);
  const dims = checkKernelShapes(
    spec,
    spec.bindings.map((b) => b.name),
    tensors.map((t) => t.shape),
  );
  const twin = spec.twin(
    tensors.map((t) => t.data),
    dims,
    args,
  );
  const out = await Promise.all(writtenBindings(spec).map((k) => be.read(ts[k])));
  be.releaseAll();
  return out.map((gpu, i) => ({ gpu, twin: twin[i] }));
}
