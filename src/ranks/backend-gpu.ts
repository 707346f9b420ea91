import { copyCols } from '../kernels/copy-cols.ts';
import type { ColumnBlock } from '../reference/copy-cols.ts';
import { add, addInPlace } from '../kernels/add.ts';
import type { KernelContext } from '../kernels/context.ts';
import {
  crossEntropyGrad,
  crossEntropyLocalMax,
  crossEntropyLocalSumExp,
  crossEntropyLoss,
  crossEntropyTargetLogit,
} from '../kernels/cross-entropy.ts';
import { dispatchKernel } from '../kernels/dispatch-kernel.ts';
import { embedding, embeddingBackward } from '../kernels/embedding.ts';
import { gemmStrided } from '../kernels/gemm.ts';
import { rmsnorm, rmsnormBackward, rmsnormWeightGrad } from '../kernels/rmsnorm.ts';
import { rope, ropeBackward } from '../kernels/rope.ts';
import { softmax, softmaxBackward } from '../kernels/softmax.ts';
import { swiglu, swigluBackward } from '../kernels/swiglu.ts';
import { createTensor, readTensor, type GpuTensor } from '../kernels/tensor.ts';
import type { GemmProblem } from '../reference/gemm.ts';
import type { GridKernelSpec } from '../reference/kernel-spec.ts';
import type { Backend, OpSpec, SoftmaxArgs } from '../parallel/backend.ts';
import type { KernelName, OpPhase } from '../parallel/plan-types.ts';

/** The layer on WebGPU: every op is one kernel dispatch named by its op's label (ctx.scope) for timing. */
export class GpuBackend implements Backend<GpuTensor> {
  readonly kind = 'gpu';
  phase: OpPhase = 'forward';
  private readonly live = new Set<GpuTensor>();

  /**
   * `deferRelease`: release() keeps each buffer until releaseAll (needed while ctx.holdUntilFlush
   * holds work that uses it). `ownedElsewhere`: tensors another owner frees (collective results
   * reused from step to step, ResultTensors), which release() leaves alone.
   */
  constructor(
    readonly ctx: KernelContext,
    private readonly opts: {
      readonly deferRelease?: boolean;
      readonly ownedElsewhere?: (t: GpuTensor) => boolean;
    } = {},
  ) {}

  /** Takes ownership of a tensor made elsewhere (a collective's result), freed by releaseAll. */
  adopt(t: GpuTensor): void {
    this.live.add(t);
  }

  /** Frees every tensor this backend made or adopted and has not released. */
  releaseAll(): void {
    this.ctx.submit();
    for (const t of this.live) t.buffer.destroy();
    this.live.clear();
  }

  private run(op: OpSpec, body: () => void): void {
    this.ctx.op(op.label, body);
  }

  tensor(name: string, shape: readonly number[], data?: Float32Array | Float64Array): GpuTensor {
    const t = createTensor(this.ctx.device, name, shape, data instanceof Float64Array ? Float32Array.from(data) : data);
    this.live.add(t);
    return t;
  }
  shapeOf(t: GpuTensor): readonly number[] {
    return t.shape;
  }
  async read(t: GpuTensor): Promise<Float32Array> {
    await this.ctx.flush();
    return readTensor(this.ctx.device, t);
  }
  release(t: GpuTensor): void {
    if (this.opts.deferRelease || this.opts.ownedElsewhere?.(t)) return; // freed by releaseAll, or by its owner
    this.ctx.submit();
    t.buffer.destroy();
    this.live.delete(t);
  }
  kernel<A>(op: OpSpec, spec: GridKernelSpec<KernelName, A>, tensors: readonly GpuTensor[], args: A): void {
    this.run(op, () => dispatchKernel(this.ctx, spec, tensors, args));
  }
  gemm(op: OpSpec, p: GemmProblem, a: GpuTensor, b: GpuTensor, c: GpuTensor): void {
    this.run(op, () => gemmStrided(this.ctx, p, a, b, c));
  }
  rmsnorm(op: OpSpec, x: GpuTensor, g: GpuTensor, y: GpuTensor, rstd: GpuTensor, eps: number): void {
    this.run(op, () => rmsnorm(this.ctx, x, g, y, rstd, { eps }));
  }
  rmsnormBackward(op: OpSpec, x: GpuTensor, g: GpuTensor, rstd: GpuTensor, dy: GpuTensor, dx: GpuTensor): void {
    this.run(op, () => rmsnormBackward(this.ctx, x, g, rstd, dy, dx));
  }
  rmsnormWeightGrad(op: OpSpec, x: GpuTensor, rstd: GpuTensor, dy: GpuTensor, dg: GpuTensor): void {
    this.run(op, () => rmsnormWeightGrad(this.ctx, x, rstd, dy, dg));
  }
  rope(op: OpSpec, x: GpuTensor, out: GpuTensor, base: number, positionOffset: number): void {
    this.run(op, () => rope(this.ctx, x, out, { base, positionOffset }));
  }
  ropeBackward(op: OpSpec, dy: GpuTensor, dx: GpuTensor, base: number, positionOffset: number): void {
    this.run(op, () => ropeBackward(this.ctx, dy, dx, { base, positionOffset }));
  }
  softmax(op: OpSpec, x: GpuTensor, y: GpuTensor, args: SoftmaxArgs): void {
    this.run(op, () => softmax(this.ctx, x, y, args));
  }
  softmaxBackward(op: OpSpec, y: GpuTensor, dy: GpuTensor, dx: GpuTensor, scale: number): void {
    this.run(op, () => softmaxBackward(this.ctx, y, dy, dx, { scale }));
  }
  swiglu(op: OpSpec, g: GpuTensor, u: GpuTensor, y: GpuTensor): void {
    this.run(op, () => swiglu(this.ctx, g, u, y));
  }
  swigluBackward(op: OpSpec, g: GpuTensor, u: GpuTensor, dy: GpuTensor, dg: GpuTensor, du: GpuTensor): void {
    this.run(op, () => swigluBackward(this.ctx, g, u, dy, dg, du));
  }
  add(op: OpSpec, a: GpuTensor, b: GpuTensor, out: GpuTensor): void {
    this.run(op, () => add(this.ctx, a, b, out));
  }
  copyCols(
    op: OpSpec,
    src: GpuTensor,
    dst: GpuTensor,
    rows: number,
    n: number,
    from: ColumnBlock,
    to: ColumnBlock,
  ): void {
    this.run(op, () => copyCols(this.ctx, src, dst, rows, n, from, to));
  }
  addInPlace(op: OpSpec, acc: GpuTensor, b: GpuTensor): void {
    this.run(op, () => addInPlace(this.ctx, acc, b));
  }
  embedding(op: OpSpec, ids: GpuTensor, table: GpuTensor, out: GpuTensor, vocabStart: number): void {
    this.run(op, () => embedding(this.ctx, ids, table, out, { vocabStart }));
  }
  embeddingBackward(op: OpSpec, ids: GpuTensor, dy: GpuTensor, dtable: GpuTensor, vocabStart: number): void {
    this.run(op, () => embeddingBackward(this.ctx, ids, dy, dtable, { vocabStart }));
  }
  ceLocalMax(op: OpSpec, logits: GpuTensor, out: GpuTensor): void {
    this.run(op, () => crossEntropyLocalMax(this.ctx, logits, out));
  }
  ceLocalSumExp(op: OpSpec, logits: GpuTensor, globalMax: GpuTensor, out: GpuTensor): void {
    this.run(op, () => crossEntropyLocalSumExp(this.ctx, logits, globalMax, out));
  }
  ceTargetLogit(op: OpSpec, logits: GpuTensor, targets: GpuTensor, out: GpuTensor, vocabStart: number): void {
    this.run(op, () => crossEntropyTargetLogit(this.ctx, logits, targets, out, { vocabStart }));
  }
  ceGrad(
    op: OpSpec,
    logits: GpuTensor,
    targets: GpuTensor,
    globalMax: GpuTensor,
    globalSum: GpuTensor,
    dlogits: GpuTensor,
    vocabStart: number,
    scale: number,
  ): void {
    this.run(op, () =>
      crossEntropyGrad(this.ctx, logits, targets, globalMax, globalSum, dlogits, { vocabStart, scale }),
    );
  }
  ceLoss(op: OpSpec, globalMax: GpuTensor, globalSum: GpuTensor, targetLogit: GpuTensor, loss: GpuTensor): void {
    this.run(op, () => crossEntropyLoss(this.ctx, globalMax, globalSum, targetLogit, loss));
  }
  flush(): Promise<void> {
    return this.ctx.flush();
  }
}
