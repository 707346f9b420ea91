import type { Collectives, CollectiveOp, ReduceOp } from '../comm/collectives.ts';
import { ringBytesSent } from '../comm/ring-bytes.ts';
import { numel } from '../core/shape.ts';
import { gemmFlops, type GemmProblem } from '../reference/gemm.ts';
import type { Backend, SoftmaxArgs } from './backend.ts';
import type { NamedCollective } from './layer-comm.ts';
import type { OpPhase, PlannedCollective, PlannedOp } from './plan-types.ts';

/** A tensor as the planner sees it: a name and a shape, no data. */
export interface ShapeTensor {
  readonly name: string;
  readonly shape: readonly number[];
}

/** Arithmetic per output element of the non-GEMM kernels (estimates: exp, sigmoid, sin/cos count as ~4). */
const perElement: Record<string, number> = {
  rmsnorm: 4,
  rmsnormBackward: 8,
  rmsnormWeightGrad: 3,
  rope: 6,
  ropeBackward: 6,
  softmax: 8,
  softmaxBackward: 4,
  swiglu: 7,
  swigluBackward: 12,
  add: 1,
  addInPlace: 1,
  embedding: 0,
  embeddingBackward: 1,
  ceLocalMax: 1,
  ceLocalSumExp: 5,
  ceTargetLogit: 0,
  ceGrad: 6,
  ceLoss: 5,
};

/**
 * Runs the layer on shapes only and records every op in order: GEMMs with their local M, N, K
 * and FLOPs, kernels with estimated FLOPs, collectives (via ShapeCollectives) with payload and
 * ring bytes. This is how the plan is made from the very code that runs on the ranks.
 */
export class PlanBackend implements Backend<ShapeTensor> {
  readonly kind = 'plan';
  phase: OpPhase = 'forward';
  readonly ops: PlannedOp[] = [];
  /** The strided problem of every GEMM recorded, in order (what the GEMM tuner times). */
  readonly gemmProblems: GemmProblem[] = [];
  pending: NamedCollective | undefined;

  private push(op: Omit<PlannedOp, 'index' | 'phase'>): void {
    this.ops.push({ index: this.ops.length, phase: this.phase, ...op });
  }

  private kernel(kernel: string, name: string, ins: ShapeTensor[], out: ShapeTensor): void {
    this.push({
      name,
      kind: 'kernel',
      kernel,
      inShapes: ins.map((t) => t.shape),
      outShape: out.shape,
      flops: (perElement[kernel] ?? 1) * numel(out.shape),
    });
  }

  /** Records a collective issued by the layer's named communicator. */
  recordCollective(collective: PlannedCollective): void {
    const named = this.pending;
    this.pending = undefined;
    if (!named) throw new Error(`PlanBackend: a ${collective.op} was issued outside the layer's named communicator.`);
    this.push({
      name: named.name,
      kind: 'collective',
      inShapes: [collective.inShape],
      outShape: collective.outShape,
      flops: 0,
      collective: { ...collective, mapping: named.mapping },
    });
  }

  tensor(name: string, shape: readonly number[]): ShapeTensor {
    return { name, shape: [...shape] };
  }
  shapeOf(t: ShapeTensor): readonly number[] {
    return t.shape;
  }
  async read(t: ShapeTensor): Promise<Float32Array> {
    return new Float32Array(numel(t.shape));
  }
  release(): void {}
  gemm(op: string, p: GemmProblem, a: ShapeTensor, b: ShapeTensor, c: ShapeTensor): void {
    this.gemmProblems.push(p);
    this.push({
      name: op,
      kind: 'gemm',
      kernel: 'gemm',
      inShapes: [a.shape, b.shape],
      outShape: c.shape,
      flops: gemmFlops(p),
      gemm: { M: p.M, N: p.N, K: p.K, batch: p.batch, flops: gemmFlops(p) },
    });
  }
  rmsnorm(op: string, x: ShapeTensor, g: ShapeTensor, y: ShapeTensor): void {
    this.kernel('rmsnorm', op, [x, g], y);
  }
  rmsnormBackward(op: string, x: ShapeTensor, g: ShapeTensor, _r: ShapeTensor, dy: ShapeTensor, dx: ShapeTensor): void {
    this.kernel('rmsnormBackward', op, [x, g, dy], dx);
  }
  rmsnormWeightGrad(op: string, x: ShapeTensor, _r: ShapeTensor, dy: ShapeTensor, dg: ShapeTensor): void {
    this.push({
      name: op,
      kind: 'kernel',
      kernel: 'rmsnormWeightGrad',
      inShapes: [x.shape, dy.shape],
      outShape: dg.shape,
      flops: perElement.rmsnormWeightGrad * numel(x.shape),
    });
  }
  rope(op: string, x: ShapeTensor, out: ShapeTensor): void {
    this.kernel('rope', op, [x], out);
  }
  ropeBackward(op: string, dy: ShapeTensor, dx: ShapeTensor): void {
    this.kernel('ropeBackward', op, [dy], dx);
  }
  softmax(op: string, x: ShapeTensor, y: ShapeTensor, _a: SoftmaxArgs): void {
    this.kernel('softmax', op, [x], y);
  }
  softmaxBackward(op: string, y: ShapeTensor, dy: ShapeTensor, dx: ShapeTensor): void {
    this.kernel('softmaxBackward', op, [y, dy], dx);
  }
  swiglu(op: string, g: ShapeTensor, u: ShapeTensor, y: ShapeTensor): void {
    this.kernel('swiglu', op, [g, u], y);
  }
  swigluBackward(op: string, g: ShapeTensor, u: ShapeTensor, dy: ShapeTensor, dg: ShapeTensor): void {
    this.kernel('swigluBackward', op, [g, u, dy], dg);
  }
  add(op: string, a: ShapeTensor, b: ShapeTensor, out: ShapeTensor): void {
    this.kernel('add', op, [a, b], out);
  }
  addInPlace(op: string, acc: ShapeTensor, b: ShapeTensor): void {
    this.kernel('addInPlace', op, [acc, b], acc);
  }
  embedding(op: string, ids: ShapeTensor, table: ShapeTensor, out: ShapeTensor): void {
    this.kernel('embedding', op, [ids, table], out);
  }
  embeddingBackward(op: string, ids: ShapeTensor, dy: ShapeTensor, dtable: ShapeTensor): void {
    this.push({
      name: op,
      kind: 'kernel',
      kernel: 'embeddingBackward',
      inShapes: [ids.shape, dy.shape],
      outShape: dtable.shape,
      flops: numel(dy.shape),
    });
  }
  ceLocalMax(op: string, logits: ShapeTensor, out: ShapeTensor): void {
    this.push({
      name: op,
      kind: 'kernel',
      kernel: 'ceLocalMax',
      inShapes: [logits.shape],
      outShape: out.shape,
      flops: numel(logits.shape),
    });
  }
  ceLocalSumExp(op: string, logits: ShapeTensor, m: ShapeTensor, out: ShapeTensor): void {
    this.push({
      name: op,
      kind: 'kernel',
      kernel: 'ceLocalSumExp',
      inShapes: [logits.shape, m.shape],
      outShape: out.shape,
      flops: 5 * numel(logits.shape),
    });
  }
  ceTargetLogit(op: string, logits: ShapeTensor, targets: ShapeTensor, out: ShapeTensor): void {
    this.kernel('ceTargetLogit', op, [logits, targets], out);
  }
  ceGrad(op: string, logits: ShapeTensor, targets: ShapeTensor, m: ShapeTensor, s: ShapeTensor, dl: ShapeTensor): void {
    this.kernel('ceGrad', op, [logits, targets, m, s], dl);
  }
  ceLoss(op: string, m: ShapeTensor, s: ShapeTensor, z: ShapeTensor, loss: ShapeTensor): void {
    this.kernel('ceLoss', op, [m, s, z], loss);
  }
  async flush(): Promise<void> {}
}

/**
 * Collectives on shapes only, for the planner: output shapes as the real ones give them, and a
 * PlannedCollective (payload S: all-reduce the tensor, reduce-scatter its input, all-gather its
 * output; ring bytes per ringBytesSent) recorded on the plan backend.
 */
export class ShapeCollectives implements Collectives<ShapeTensor> {
  readonly transport = 'in-process';

  constructor(
    readonly rank: number,
    readonly size: number,
    private readonly plan: PlanBackend,
  ) {}

  private record(
    op: CollectiveOp,
    x: ShapeTensor,
    out: readonly number[],
    extra: { dim?: number; reduce?: ReduceOp },
  ): ShapeTensor {
    const bytes = 4 * (op === 'allGather' ? numel(out) : numel(x.shape));
    this.plan.recordCollective({
      op,
      ...extra,
      inShape: x.shape,
      outShape: out,
      groupSize: this.size,
      payloadBytes: bytes,
      ringBytesSent: ringBytesSent(op, bytes, this.size),
      mapping: '',
    });
    return { name: `${x.name}.${op}`, shape: out };
  }

  /** x's shape with dim split t ways (`split`) or concatenated from t (`concat`). */
  private along(x: ShapeTensor, dim: number, how: 'split' | 'concat'): number[] {
    const k = dim < 0 ? x.shape.length + dim : dim;
    if (how === 'split' && x.shape[k] % this.size !== 0)
      throw new Error(`plan: dim ${k} of [${x.shape.join(', ')}] is not divisible by t = ${this.size}.`);
    return x.shape.map((v, i) => (i !== k ? v : how === 'split' ? v / this.size : v * this.size));
  }

  async allReduce(x: ShapeTensor, op: ReduceOp = 'sum'): Promise<ShapeTensor> {
    return this.record('allReduce', x, x.shape, { reduce: op });
  }
  async reduceScatter(x: ShapeTensor, dim: number, op: ReduceOp = 'sum'): Promise<ShapeTensor> {
    return this.record('reduceScatter', x, this.along(x, dim, 'split'), { dim, reduce: op });
  }
  async allGather(x: ShapeTensor, dim: number): Promise<ShapeTensor> {
    return this.record('allGather', x, this.along(x, dim, 'concat'), { dim });
  }
  async broadcast(x: ShapeTensor): Promise<ShapeTensor> {
    return this.record('broadcast', x, x.shape, {});
  }
  async barrier(): Promise<void> {
    this.record('barrier', { name: 'barrier', shape: [] }, [], {});
  }
  async shard(x: ShapeTensor, dim: number): Promise<ShapeTensor> {
    return { name: `${x.name}.shard`, shape: this.along(x, dim, 'split') };
  }
}
