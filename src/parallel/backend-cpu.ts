import { copyColsRef, type ColumnBlock } from '../reference/copy-cols.ts';
import { hostTensor, type HostTensor } from '../comm/host-tensor.ts';
import { ceGradRef, ceLocalMaxRef, ceLocalSumExpRef, ceLossRef, ceTargetLogitRef } from '../reference/cross-entropy.ts';
import { embeddingBackwardRef, embeddingRef } from '../reference/embedding.ts';
import { gemmRef, type GemmProblem } from '../reference/gemm.ts';
import { rmsnormBackwardRef, rmsnormRef } from '../reference/rmsnorm.ts';
import { ropeRef } from '../reference/rope.ts';
import { addInPlaceKernel, addKernel } from '../reference/add.ts';
import { checkGridShapes, writtenBindings, type GridKernelSpec } from '../reference/kernel-spec.ts';
import { softmaxBackwardKernel, softmaxKernel } from '../reference/softmax.ts';
import { swigluBackwardKernel, swigluKernel } from '../reference/swiglu.ts';
import type { Backend, OpSpec, SoftmaxArgs } from './backend.ts';
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

const last = (t: CpuTensor): number => t.shape[t.shape.length - 1];

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
  // rmsnorm's ε per saved rstd, for the backward (the twin recomputes rstd from x and ε).
  private readonly eps = new WeakMap<CpuTensor, number>();

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
  kernel<A>(_op: OpSpec, spec: GridKernelSpec<KernelName, A>, tensors: readonly T[], args: A): void {
    const dims = checkGridShapes(
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
  rmsnorm(_op: OpSpec, x: T, g: T, y: T, rstd: T, eps: number): void {
    const r = rmsnormRef(x.data, g.data, last(x), eps);
    store(y, r.y);
    store(rstd, r.rstd);
    this.eps.set(rstd, eps);
  }
  private normBackward(x: T, g: CpuTensor, rstd: T, dy: T): { dx: Float64Array; dg: Float64Array } {
    const eps = this.eps.get(rstd);
    if (eps === undefined) throw new Error('CpuBackend: rmsnorm backward needs the rstd its forward saved.');
    return rmsnormBackwardRef(x.data, g.data, dy.data, last(x), eps);
  }
  rmsnormBackward(_op: OpSpec, x: T, g: T, rstd: T, dy: T, dx: T): void {
    store(dx, this.normBackward(x, g, rstd, dy).dx);
  }
  rmsnormWeightGrad(_op: OpSpec, x: T, rstd: T, dy: T, dg: T): void {
    // dg does not depend on g: any gain gives the same Σ dy · x · rstd.
    store(dg, this.normBackward(x, hostTensor([last(x)], new Float32Array(last(x)).fill(1)), rstd, dy).dg);
  }
  rope(_op: OpSpec, x: T, out: T, base: number, positionOffset: number): void {
    store(out, ropeRef(x.data, x.shape, { base, positionOffset }));
  }
  ropeBackward(_op: OpSpec, dy: T, dx: T, base: number, positionOffset: number): void {
    store(dx, ropeRef(dy.data, dy.shape, { base, positionOffset }, true));
  }
  softmax(op: OpSpec, x: T, y: T, args: SoftmaxArgs): void {
    this.kernel(op, softmaxKernel, [x, y], args);
  }
  softmaxBackward(op: OpSpec, y: T, dy: T, dx: T, scale: number): void {
    this.kernel(op, softmaxBackwardKernel, [y, dy, dx], { scale });
  }
  swiglu(op: OpSpec, g: T, u: T, y: T): void {
    this.kernel(op, swigluKernel, [g, u, y], {});
  }
  swigluBackward(op: OpSpec, g: T, u: T, dy: T, dg: T, du: T): void {
    this.kernel(op, swigluBackwardKernel, [g, u, dy, dg, du], {});
  }
  add(op: OpSpec, a: T, b: T, out: T): void {
    this.kernel(op, addKernel, [a, b, out], {});
  }
  copyCols(_op: OpSpec, src: T, dst: T, rows: number, n: number, from: ColumnBlock, to: ColumnBlock): void {
    copyColsRef(src.data, dst.data, rows, n, from, to);
  }
  addInPlace(op: OpSpec, acc: T, b: T): void {
    this.kernel(op, addInPlaceKernel, [acc, b], {});
  }
  embedding(_op: OpSpec, ids: T, table: T, out: T, vocabStart: number): void {
    store(out, embeddingRef(ids.data, table.data, last(table), vocabStart));
  }
  embeddingBackward(_op: OpSpec, ids: T, dy: T, dtable: T, vocabStart: number): void {
    store(dtable, embeddingBackwardRef(ids.data, dy.data, dtable.shape[0], last(dtable), vocabStart));
  }
  ceLocalMax(_op: OpSpec, logits: T, out: T): void {
    store(out, ceLocalMaxRef(logits.data, last(logits)));
  }
  ceLocalSumExp(_op: OpSpec, logits: T, globalMax: T, out: T): void {
    store(out, ceLocalSumExpRef(logits.data, last(logits), globalMax.data));
  }
  ceTargetLogit(_op: OpSpec, logits: T, targets: T, out: T, vocabStart: number): void {
    store(out, ceTargetLogitRef(logits.data, last(logits), targets.data, vocabStart));
  }
  ceGrad(
    _op: OpSpec,
    logits: T,
    targets: T,
    globalMax: T,
    globalSum: T,
    dlogits: T,
    vocabStart: number,
    scale: number,
  ): void {
    store(
      dlogits,
      ceGradRef(logits.data, last(logits), targets.data, vocabStart, globalMax.data, globalSum.data, scale),
    );
  }
  ceLoss(_op: OpSpec, globalMax: T, globalSum: T, targetLogit: T, loss: T): void {
    store(loss, ceLossRef(globalMax.data, globalSum.data, targetLogit.data));
  }
  async flush(): Promise<void> {}
}
