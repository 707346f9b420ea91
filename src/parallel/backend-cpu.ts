import { hostTensor, type HostTensor } from '../comm/host-tensor.ts';
import { ceGradRef, ceLocalMaxRef, ceLocalSumExpRef, ceLossRef, ceTargetLogitRef } from '../reference/cross-entropy.ts';
import { embeddingBackwardRef, embeddingRef } from '../reference/embedding.ts';
import { gemmRef, type GemmProblem } from '../reference/gemm.ts';
import { rmsnormBackwardRef, rmsnormRef } from '../reference/rmsnorm.ts';
import { ropeRef } from '../reference/rope.ts';
import { softmaxBackwardRef, softmaxRef } from '../reference/softmax.ts';
import { swigluBackwardRef, swigluRef } from '../reference/swiglu.ts';
import type { Backend, OpSpec, SoftmaxArgs } from './backend.ts';
import type { OpPhase } from './plan-types.ts';

const last = (t: HostTensor): number => t.shape[t.shape.length - 1];

/** Writes a float64 result into a float32 tensor (one rounding per op, as the GPU stores it). */
function store(out: HostTensor, values: ArrayLike<number>): void {
  if (values.length !== out.data.length)
    throw new Error(`CpuBackend: result has ${values.length} values, output holds ${out.data.length}.`);
  out.data.set(values);
}

/**
 * The layer on the CPU twins (float64 inside each op, float32 between ops): the same layer code
 * as on the GPU, for Node tests with the in-process communicator and as a second oracle.
 */
export class CpuBackend implements Backend<HostTensor> {
  readonly kind = 'cpu';
  phase: OpPhase = 'forward';
  // rmsnorm's ε per saved rstd, for the backward (the twin recomputes rstd from x and ε).
  private readonly eps = new WeakMap<HostTensor, number>();

  tensor(_name: string, shape: readonly number[], data?: Float32Array): HostTensor {
    return hostTensor(shape, data ? data.slice() : undefined);
  }
  shapeOf(t: HostTensor): readonly number[] {
    return t.shape;
  }
  async read(t: HostTensor): Promise<Float32Array> {
    return t.data.slice();
  }
  release(): void {}
  gemm(_op: OpSpec, p: GemmProblem, a: HostTensor, b: HostTensor, c: HostTensor): void {
    gemmRef(p, a.data, b.data, c.data);
  }
  rmsnorm(_op: OpSpec, x: HostTensor, g: HostTensor, y: HostTensor, rstd: HostTensor, eps: number): void {
    const r = rmsnormRef(x.data, g.data, last(x), eps);
    store(y, r.y);
    store(rstd, r.rstd);
    this.eps.set(rstd, eps);
  }
  private normBackward(
    x: HostTensor,
    g: HostTensor,
    rstd: HostTensor,
    dy: HostTensor,
  ): { dx: Float64Array; dg: Float64Array } {
    const eps = this.eps.get(rstd);
    if (eps === undefined) throw new Error('CpuBackend: rmsnorm backward needs the rstd its forward saved.');
    return rmsnormBackwardRef(x.data, g.data, dy.data, last(x), eps);
  }
  rmsnormBackward(_op: OpSpec, x: HostTensor, g: HostTensor, rstd: HostTensor, dy: HostTensor, dx: HostTensor): void {
    store(dx, this.normBackward(x, g, rstd, dy).dx);
  }
  rmsnormWeightGrad(_op: OpSpec, x: HostTensor, rstd: HostTensor, dy: HostTensor, dg: HostTensor): void {
    // dg does not depend on g: any gain gives the same Σ dy · x · rstd.
    store(dg, this.normBackward(x, hostTensor([last(x)], new Float32Array(last(x)).fill(1)), rstd, dy).dg);
  }
  rope(_op: OpSpec, x: HostTensor, out: HostTensor, base: number, positionOffset: number): void {
    store(out, ropeRef(x.data, x.shape, { base, positionOffset }));
  }
  ropeBackward(_op: OpSpec, dy: HostTensor, dx: HostTensor, base: number, positionOffset: number): void {
    store(dx, ropeRef(dy.data, dy.shape, { base, positionOffset }, true));
  }
  softmax(_op: OpSpec, x: HostTensor, y: HostTensor, args: SoftmaxArgs): void {
    store(y, softmaxRef(x.data, x.shape, args));
  }
  softmaxBackward(_op: OpSpec, y: HostTensor, dy: HostTensor, dx: HostTensor, scale: number): void {
    store(dx, softmaxBackwardRef(y.data, dy.data, last(y), scale));
  }
  swiglu(_op: OpSpec, g: HostTensor, u: HostTensor, y: HostTensor): void {
    store(y, swigluRef(g.data, u.data));
  }
  swigluBackward(_op: OpSpec, g: HostTensor, u: HostTensor, dy: HostTensor, dg: HostTensor, du: HostTensor): void {
    const r = swigluBackwardRef(g.data, u.data, dy.data);
    store(dg, r.dg);
    store(du, r.du);
  }
  add(_op: OpSpec, a: HostTensor, b: HostTensor, out: HostTensor): void {
    store(
      out,
      a.data.map((v, i) => v + b.data[i]),
    );
  }
  addInPlace(_op: OpSpec, acc: HostTensor, b: HostTensor): void {
    for (let i = 0; i < acc.data.length; i++) acc.data[i] += b.data[i];
  }
  embedding(_op: OpSpec, ids: HostTensor, table: HostTensor, out: HostTensor, vocabStart: number): void {
    store(out, embeddingRef(ids.data, table.data, last(table), vocabStart));
  }
  embeddingBackward(_op: OpSpec, ids: HostTensor, dy: HostTensor, dtable: HostTensor, vocabStart: number): void {
    store(dtable, embeddingBackwardRef(ids.data, dy.data, dtable.shape[0], last(dtable), vocabStart));
  }
  ceLocalMax(_op: OpSpec, logits: HostTensor, out: HostTensor): void {
    store(out, ceLocalMaxRef(logits.data, last(logits)));
  }
  ceLocalSumExp(_op: OpSpec, logits: HostTensor, globalMax: HostTensor, out: HostTensor): void {
    store(out, ceLocalSumExpRef(logits.data, last(logits), globalMax.data));
  }
  ceTargetLogit(_op: OpSpec, logits: HostTensor, targets: HostTensor, out: HostTensor, vocabStart: number): void {
    store(out, ceTargetLogitRef(logits.data, last(logits), targets.data, vocabStart));
  }
  ceGrad(
    _op: OpSpec,
    logits: HostTensor,
    targets: HostTensor,
    globalMax: HostTensor,
    globalSum: HostTensor,
    dlogits: HostTensor,
    vocabStart: number,
    scale: number,
  ): void {
    store(
      dlogits,
      ceGradRef(logits.data, last(logits), targets.data, vocabStart, globalMax.data, globalSum.data, scale),
    );
  }
  ceLoss(_op: OpSpec, globalMax: HostTensor, globalSum: HostTensor, targetLogit: HostTensor, loss: HostTensor): void {
    store(loss, ceLossRef(globalMax.data, globalSum.data, targetLogit.data));
  }
  async flush(): Promise<void> {}
}
