import { add, addInPlace } from '../kernels/add.ts';
import type { KernelContext } from '../kernels/context.ts';
import {
  crossEntropyGrad,
  crossEntropyLocalMax,
  crossEntropyLocalSumExp,
  crossEntropyLoss,
  crossEntropyTargetLogit,
} from '../kernels/cross-entropy.ts';
import { embedding, embeddingBackward } from '../kernels/embedding.ts';
import { gemmStrided } from '../kernels/gemm.ts';
import { rmsnorm, rmsnormBackward, rmsnormWeightGrad } from '../kernels/rmsnorm.ts';
import { rope, ropeBackward } from '../kernels/rope.ts';
import { softmax, softmaxBackward } from '../kernels/softmax.ts';
import { swiglu, swigluBackward } from '../kernels/swiglu.ts';
import { createTensor, readTensor, type GpuTensor } from '../kernels/tensor.ts';
import type { GemmProblem } from '../reference/gemm.ts';
import type { Backend, SoftmaxArgs } from './backend.ts';
import type { OpPhase } from './plan-types.ts';

/** The layer on WebGPU: every op is one kernel dispatch named by its op (ctx.scope) for timing. */
export class GpuBackend implements Backend<GpuTensor> {
  readonly kind = 'gpu';
  phase: OpPhase = 'forward';
  private readonly live = new Set<GpuTensor>();

  /** `deferRelease`: release() keeps each buffer until releaseAll (needed while ctx.holdUntilFlush holds work that uses it). */
  constructor(
    readonly ctx: KernelContext,
    private readonly opts: { readonly deferRelease?: boolean } = {},
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

  private run(op: string, body: () => void): void {
    this.ctx.scope = op;
    try {
      body();
    } finally {
      this.ctx.scope = undefined;
    }
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
    if (this.opts.deferRelease) return; // freed by releaseAll
    this.ctx.submit();
    t.buffer.destroy();
    this.live.delete(t);
  }
  gemm(op: string, p: GemmProblem, a: GpuTensor, b: GpuTensor, c: GpuTensor): void {
    this.run(op, () => gemmStrided(this.ctx, p, a, b, c));
  }
  rmsnorm(op: string, x: GpuTensor, g: GpuTensor, y: GpuTensor, rstd: GpuTensor, eps: number): void {
    this.run(op, () => rmsnorm(this.ctx, x, g, y, rstd, { eps }));
  }
  rmsnormBackward(op: string, x: GpuTensor, g: GpuTensor, rstd: GpuTensor, dy: GpuTensor, dx: GpuTensor): void {
    this.run(op, () => rmsnormBackward(this.ctx, x, g, rstd, dy, dx));
  }
  rmsnormWeightGrad(op: string, x: GpuTensor, rstd: GpuTensor, dy: GpuTensor, dg: GpuTensor): void {
    this.run(op, () => rmsnormWeightGrad(this.ctx, x, rstd, dy, dg));
  }
  rope(op: string, x: GpuTensor, out: GpuTensor, base: number, positionOffset: number): void {
    this.run(op, () => rope(this.ctx, x, out, { base, positionOffset }));
  }
  ropeBackward(op: string, dy: GpuTensor, dx: GpuTensor, base: number, positionOffset: number): void {
    this.run(op, () => ropeBackward(this.ctx, dy, dx, { base, positionOffset }));
  }
  softmax(op: string, x: GpuTensor, y: GpuTensor, args: SoftmaxArgs): void {
    this.run(op, () => softmax(this.ctx, x, y, args));
  }
  softmaxBackward(op: string, y: GpuTensor, dy: GpuTensor, dx: GpuTensor, scale: number): void {
    this.run(op, () => softmaxBackward(this.ctx, y, dy, dx, { scale }));
  }
  swiglu(op: string, g: GpuTensor, u: GpuTensor, y: GpuTensor): void {
    this.run(op, () => swiglu(this.ctx, g, u, y));
  }
  swigluBackward(op: string, g: GpuTensor, u: GpuTensor, dy: GpuTensor, dg: GpuTensor, du: GpuTensor): void {
    this.run(op, () => swigluBackward(this.ctx, g, u, dy, dg, du));
  }
  add(op: string, a: GpuTensor, b: GpuTensor, out: GpuTensor): void {
    this.run(op, () => add(this.ctx, a, b, out));
  }
  addInPlace(op: string, acc: GpuTensor, b: GpuTensor): void {
    this.run(op, () => addInPlace(this.ctx, acc, b));
  }
  embedding(op: string, ids: GpuTensor, table: GpuTensor, out: GpuTensor, vocabStart: number): void {
    this.run(op, () => embedding(this.ctx, ids, table, out, { vocabStart }));
  }
  embeddingBackward(op: string, ids: GpuTensor, dy: GpuTensor, dtable: GpuTensor, vocabStart: number): void {
    this.run(op, () => embeddingBackward(this.ctx, ids, dy, dtable, { vocabStart }));
  }
  ceLocalMax(op: string, logits: GpuTensor, out: GpuTensor): void {
    this.run(op, () => crossEntropyLocalMax(this.ctx, logits, out));
  }
  ceLocalSumExp(op: string, logits: GpuTensor, globalMax: GpuTensor, out: GpuTensor): void {
    this.run(op, () => crossEntropyLocalSumExp(this.ctx, logits, globalMax, out));
  }
  ceTargetLogit(op: string, logits: GpuTensor, targets: GpuTensor, out: GpuTensor, vocabStart: number): void {
    this.run(op, () => crossEntropyTargetLogit(this.ctx, logits, targets, out, { vocabStart }));
  }
  ceGrad(
    op: string,
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
  ceLoss(op: string, globalMax: GpuTensor, globalSum: GpuTensor, targetLogit: GpuTensor, loss: GpuTensor): void {
    this.run(op, () => crossEntropyLoss(this.ctx, globalMax, globalSum, targetLogit, loss));
  }
  flush(): Promise<void> {
    return this.ctx.flush();
  }
}
