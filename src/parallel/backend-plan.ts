import type { Collectives, CollectiveOp, ReduceOp } from '../comm/collectives.ts';
import { ringBytesSent } from '../comm/ring-bytes.ts';
import { numel } from '../core/shape.ts';
import { gemmFlops, type GemmProblem } from '../reference/gemm.ts';
import type { Backend, OpSpec, SoftmaxArgs } from './backend.ts';
import type { NamedCollective } from './layer-comm.ts';
import type {
  KernelName,
  OpPhase,
  OpSplit,
  PlannedCollective,
  PlannedGemmOp,
  PlannedKernelOp,
  PlannedOp,
} from './plan-types.ts';

/** What the plan backend fills in for every compute op; the rest comes with the op's body. */
type Common = 'index' | 'phase' | 'name' | 'role' | 'split' | 'weight' | 'megatron' | 'overlap';

/** A tensor as the planner sees it: a name and a shape, no data. */
export interface ShapeTensor {
  readonly name: string;
  readonly shape: readonly number[];
}

/** Arithmetic per output element of the non-GEMM kernels (estimates: exp, sigmoid, sin/cos count as ~4). */
const perElement: Record<KernelName, number> = {
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
  copyCols: 0,
  embedding: 0,
  embeddingBackward: 1,
  ceLocalMax: 1,
  ceLocalSumExp: 5,
  ceTargetLogit: 0,
  ceGrad: 6,
  ceLoss: 5,
};

/** The Megatron module a kernel implements (a GEMM's comes from its split, see gemmModule). */
const kernelModule: Record<KernelName, string> = {
  rmsnorm: 'RMSNorm',
  rmsnormBackward: 'RMSNorm',
  rmsnormWeightGrad: 'RMSNorm',
  rope: 'rotary position embedding (apply_rotary_pos_emb)',
  ropeBackward: 'rotary position embedding (apply_rotary_pos_emb)',
  softmax: 'core attention softmax (DotProductAttention)',
  softmaxBackward: 'core attention softmax (DotProductAttention)',
  swiglu: 'SwiGLU activation (MLP)',
  swigluBackward: 'SwiGLU activation (MLP)',
  add: 'residual connection',
  addInPlace: 'residual connection',
  copyCols: 'tensor copy',
  embedding: 'VocabParallelEmbedding',
  embeddingBackward: 'VocabParallelEmbedding',
  ceLocalMax: 'vocab_parallel_cross_entropy',
  ceLocalSumExp: 'vocab_parallel_cross_entropy',
  ceTargetLogit: 'vocab_parallel_cross_entropy',
  ceGrad: 'vocab_parallel_cross_entropy',
  ceLoss: 'vocab_parallel_cross_entropy',
};

/** The Megatron module of a GEMM by its split. */
const gemmModule: Partial<Record<OpSplit, string>> = {
  column: 'ColumnParallelLinear',
  row: 'RowParallelLinear',
  heads: 'core attention (DotProductAttention, heads split)',
};

/** Kernels that write a weight's gradient. */
const weightGradKernels: ReadonlySet<KernelName> = new Set(['rmsnormWeightGrad', 'embeddingBackward']);

/**
 * Runs the layer on shapes only and records every op in order: GEMMs with their local M, N, K
 * and FLOPs, kernels with estimated FLOPs, collectives (via ShapeCollectives) with payload and
 * ring bytes, each with what it is (kind, phase, role, split, weight, Megatron module, overlap).
 * This is how the plan is made from the very code that runs on the ranks.
 */
export class PlanBackend implements Backend<ShapeTensor> {
  readonly kind = 'plan';
  phase: OpPhase = 'forward';
  readonly ops: PlannedOp[] = [];
  /** The strided problem of every GEMM recorded, in order (what the GEMM tuner times). */
  readonly gemmProblems: GemmProblem[] = [];
  pending: NamedCollective | undefined;

  private push(spec: OpSpec, body: Omit<PlannedGemmOp, Common> | Omit<PlannedKernelOp, Common>): void {
    const role =
      body.kind === 'kernel' && weightGradKernels.has(body.kernel)
        ? 'wgrad'
        : (spec.role ?? (this.phase === 'forward' ? 'forward' : 'dgrad'));
    const module = body.kind === 'gemm' ? (gemmModule[spec.split] ?? 'linear') : kernelModule[body.kernel];
    const common = {
      index: this.ops.length,
      phase: this.phase,
      name: spec.label,
      role,
      split: spec.split,
      ...(spec.weight !== undefined && { weight: spec.weight }),
      megatron: spec.megatron ?? module,
      overlap: { async: false, underAsync: spec.underAsync ?? role === 'wgrad' },
    };
    this.ops.push(body.kind === 'gemm' ? { ...common, ...body } : { ...common, ...body });
  }

  private kernel(kernel: KernelName, spec: OpSpec, ins: ShapeTensor[], out: ShapeTensor, flops?: number): void {
    this.push(spec, {
      kind: 'kernel',
      kernel,
      inShapes: ins.map((t) => t.shape),
      outShape: out.shape,
      flops: flops ?? perElement[kernel] * numel(out.shape),
    });
  }

  /** Records a collective issued by the layer's named communicator. */
  recordCollective(collective: PlannedCollective): void {
    const named = this.pending;
    this.pending = undefined;
    if (!named) throw new Error(`PlanBackend: a ${collective.op} was issued outside the layer's named communicator.`);
    this.ops.push({
      index: this.ops.length,
      phase: named.phase,
      name: named.name,
      kind: 'collective',
      role: named.role,
      split: named.split,
      ...(named.weight !== undefined && { weight: named.weight }),
      megatron: named.mapping,
      overlap: { async: named.async, underAsync: false },
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
  gemm(op: OpSpec, p: GemmProblem, a: ShapeTensor, b: ShapeTensor, c: ShapeTensor): void {
    if (!op.gemm)
      throw new Error(`PlanBackend: the GEMM ${op.label} does not say which product it computes (OpSpec.gemm).`);
    this.gemmProblems.push(p);
    this.push(op, {
      kind: 'gemm',
      inShapes: [a.shape, b.shape],
      outShape: c.shape,
      flops: gemmFlops(p),
      gemm: { site: op.gemm, M: p.M, N: p.N, K: p.K, batch: p.batch, flops: gemmFlops(p) },
    });
  }
  rmsnorm(op: OpSpec, x: ShapeTensor, g: ShapeTensor, y: ShapeTensor): void {
    this.kernel('rmsnorm', op, [x, g], y);
  }
  rmsnormBackward(op: OpSpec, x: ShapeTensor, g: ShapeTensor, _r: ShapeTensor, dy: ShapeTensor, dx: ShapeTensor): void {
    this.kernel('rmsnormBackward', op, [x, g, dy], dx);
  }
  rmsnormWeightGrad(op: OpSpec, x: ShapeTensor, _r: ShapeTensor, dy: ShapeTensor, dg: ShapeTensor): void {
    this.kernel('rmsnormWeightGrad', op, [x, dy], dg, perElement.rmsnormWeightGrad * numel(x.shape));
  }
  rope(op: OpSpec, x: ShapeTensor, out: ShapeTensor): void {
    this.kernel('rope', op, [x], out);
  }
  ropeBackward(op: OpSpec, dy: ShapeTensor, dx: ShapeTensor): void {
    this.kernel('ropeBackward', op, [dy], dx);
  }
  softmax(op: OpSpec, x: ShapeTensor, y: ShapeTensor, _a: SoftmaxArgs): void {
    this.kernel('softmax', op, [x], y);
  }
  softmaxBackward(op: OpSpec, y: ShapeTensor, dy: ShapeTensor, dx: ShapeTensor): void {
    this.kernel('softmaxBackward', op, [y, dy], dx);
  }
  swiglu(op: OpSpec, g: ShapeTensor, u: ShapeTensor, y: ShapeTensor): void {
    this.kernel('swiglu', op, [g, u], y);
  }
  swigluBackward(op: OpSpec, g: ShapeTensor, u: ShapeTensor, dy: ShapeTensor, dg: ShapeTensor): void {
    this.kernel('swigluBackward', op, [g, u, dy], dg);
  }
  add(op: OpSpec, a: ShapeTensor, b: ShapeTensor, out: ShapeTensor): void {
    this.kernel('add', op, [a, b], out);
  }
  copyCols(op: OpSpec, src: ShapeTensor, dst: ShapeTensor, rows: number, n: number): void {
    this.kernel('copyCols', op, [src], { name: dst.name, shape: [rows, n] }, 0);
  }
  addInPlace(op: OpSpec, acc: ShapeTensor, b: ShapeTensor): void {
    this.kernel('addInPlace', op, [acc, b], acc);
  }
  embedding(op: OpSpec, ids: ShapeTensor, table: ShapeTensor, out: ShapeTensor): void {
    this.kernel('embedding', op, [ids, table], out);
  }
  embeddingBackward(op: OpSpec, ids: ShapeTensor, dy: ShapeTensor, dtable: ShapeTensor): void {
    this.kernel('embeddingBackward', op, [ids, dy], dtable, numel(dy.shape));
  }
  ceLocalMax(op: OpSpec, logits: ShapeTensor, out: ShapeTensor): void {
    this.kernel('ceLocalMax', op, [logits], out, numel(logits.shape));
  }
  ceLocalSumExp(op: OpSpec, logits: ShapeTensor, m: ShapeTensor, out: ShapeTensor): void {
    this.kernel('ceLocalSumExp', op, [logits, m], out, 5 * numel(logits.shape));
  }
  ceTargetLogit(op: OpSpec, logits: ShapeTensor, targets: ShapeTensor, out: ShapeTensor): void {
    this.kernel('ceTargetLogit', op, [logits, targets], out);
  }
  ceGrad(op: OpSpec, logits: ShapeTensor, targets: ShapeTensor, m: ShapeTensor, s: ShapeTensor, dl: ShapeTensor): void {
    this.kernel('ceGrad', op, [logits, targets, m, s], dl);
  }
  ceLoss(op: OpSpec, m: ShapeTensor, s: ShapeTensor, z: ShapeTensor, loss: ShapeTensor): void {
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
