import { hostTensor, type HostTensor } from '../comm/host-tensor.ts';
import { gemmRef, type GemmProblem } from '../reference/gemm.ts';
import { checkKernelShapes, writtenBindings, type KernelSpec } from '../reference/kernel-spec.ts';
import type { Backend, OpSpec } from './backend.ts';
import type { KernelName, OpPhase } from './plan-types.ts';

/** A host tensor of either precision: float32 between ops (as the GPU stores it) or float64 (gradient checks). */
export interface CpuTensor {
  readonly shape: readonly number[];
  readonly data: Float32Array | Float64Array;
}

/** A float64 host tensor. */
export interface Float64Tensor extends CpuTensor {
  readonly data: Float64Array;
}

/** Writes a float64 result into the output (rounded once when it stores float32, as the GPU does). */
function store(out: CpuTensor, values: ArrayLike<number>): void {
  if (values.length !== out.data.length)
    throw new Error(`CpuBackend: result has ${values.length} values, output holds ${out.data.length}.`);
  out.data.set(values);
}

/** Allocates a tensor of `shape`, zeros or a copy of `data`. */
export type CpuAlloc<T extends CpuTensor> = (shape: readonly number[], data?: ArrayLike<number>) => T;

const float32Alloc: CpuAlloc<HostTensor> = (shape, data) =>
  hostTensor(shape, data ? Float32Array.from(data) : undefined);

/** Float64 storage between ops: the layer exact to float64 rounding, for finite-difference checks. */
export const float64Alloc: CpuAlloc<Float64Tensor> = (shape, data) => {
  const n = shape.reduce((a, b) => a * b, 1);
  if (data && data.length !== n)
    throw new Error(`float64Alloc: [${shape.join(', ')}] holds ${n} values, got ${data.length}.`);
  return { shape: [...shape], data: data ? Float64Array.from(data) : new Float64Array(n) };
};

/**
 * The layer on the CPU twins (float64 inside each op; float32 between ops by default, float64
 * with `float64Alloc`): the same layer code as on the GPU, for Node tests with the in-process
 * communicator and as a second oracle.
 */
export class CpuBackend<T extends CpuTensor = HostTensor> implements Backend<T> {
  readonly kind = 'cpu';
  phase: OpPhase = 'forward';

  constructor(private readonly alloc: CpuAlloc<T> = float32Alloc as unknown as CpuAlloc<T>) {}

  tensor(_name: string, shape: readonly number[], data?: ArrayLike<number>): T {
    return this.alloc(shape, data);
  }
  shapeOf(t: T): readonly number[] {
    return t.shape;
  }
  async read(t: T): Promise<Float32Array> {
    return Float32Array.from(t.data);
  }
  release(): void {}
  kernel<A>(_op: OpSpec, spec: KernelSpec<KernelName, A>, tensors: readonly T[], args: A): void {
    const dims = checkKernelShapes(
      spec,
      spec.bindings.map((b) => b.name),
      tensors.map((t) => t.shape),
    );
    const out = spec.twin(
      tensors.map((t) => t.data),
      dims,
      args,
    );
    writtenBindings(spec).forEach((k, i) => store(tensors[k], out[i]));
  }
  gemm(_op: OpSpec, p: GemmProblem, a: T, b: T, c: T): void {
    gemmRef(p, a.data, b.data, c.data);
  }
  async flush(): Promise<void> {}
}
