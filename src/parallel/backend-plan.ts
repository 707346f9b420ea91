import type { Collectives, CollectiveOp, ReduceOp } from '../comm/collectives.ts';
import { ringBytesSent } from '../comm/ring-bytes.ts';
import { numel } from '../core/shape.ts';
import { gemmFlops, type GemmProblem } from '../reference/gemm.ts';
import { kernelSpecs } from '../reference/kernel-registry.ts';
import { checkKernelShapes, readBindings, writtenBindings, type KernelSpec } from '../reference/kernel-spec.ts';
import type { Backend, OpSpec } from './backend.ts';
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
type Common = 'index' | 'phase' | 'name' | 'role' | 'split' | 'weight' | 'megatron' | 'overlap' | 'chunk' | 'after';

/** A tensor as the planner sees it: a name and a shape, no data. */
export interface ShapeTensor {
  readonly name: string;
  readonly shape: readonly number[];
}

/** The Megatron module of a GEMM by its split. */
const gemmModule: Partial<Record<OpSplit, string>> = {
  column: 'ColumnParallelLinear',
  row: 'RowParallelLinear',
  heads: 'core attention (DotProductAttention, heads split)',
};

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
  /** The op that last wrote each tensor, and the collective that made each collective result (chunk dependencies). */
  private readonly writer = new Map<ShapeTensor, number>();
  private readonly madeBy = new Map<ShapeTensor, number>();

  /** The chunked collectives whose results a chunked compute op reads; notes what it writes. */
  private chunkDeps(spec: OpSpec, reads: readonly ShapeTensor[], writes: ShapeTensor): readonly number[] | undefined {
    this.writer.set(writes, this.ops.length);
    if (spec.chunk === undefined) return undefined;
    return [...new Set(reads.map((t) => this.madeBy.get(t)).filter((i): i is number => i !== undefined))];
  }

  private push(
    spec: OpSpec,
    body: Omit<PlannedGemmOp, Common> | Omit<PlannedKernelOp, Common>,
    after?: readonly number[],
  ): void {
    const role =
      body.kind === 'kernel' && kernelSpecs[body.kernel].role === 'wgrad'
        ? 'wgrad'
        : (spec.role ?? (this.phase === 'forward' ? 'forward' : 'dgrad'));
    const module = body.kind === 'gemm' ? (gemmModule[spec.split] ?? 'linear') : kernelSpecs[body.kernel].megatron;
    const common = {
      index: this.ops.length,
      phase: this.phase,
      name: spec.label,
      role,
      split: spec.split,
      ...(spec.weight !== undefined && { weight: spec.weight }),
      megatron: spec.megatron ?? module,
      overlap: { async: false, underAsync: spec.underAsync ?? role === 'wgrad' },
      ...(spec.chunk !== undefined && { chunk: spec.chunk }),
      ...(after !== undefined && { after }),
    };
    this.ops.push(body.kind === 'gemm' ? { ...common, ...body } : { ...common, ...body });
  }

  /** Records kernel `kernel` reading `ins` and writing `out` (shape `outShape`); FLOPs by its descriptor's cost. */
  private record(
    kernel: KernelName,
    spec: OpSpec,
    ins: ShapeTensor[],
    out: ShapeTensor,
    outShape: readonly number[],
  ): void {
    const { perElement, over, perElementOf } = kernelSpecs[kernel].cost;
    const after = this.chunkDeps(spec, ins, out);
    this.push(
      spec,
      {
        kind: 'kernel',
        kernel,
        inShapes: ins.map((t) => t.shape),
        outShape,
        flops:
          (perElementOf ? perElementOf(ins.map((t) => t.shape)) : perElement) *
          numel(over === undefined ? outShape : ins[over].shape),
      },
      after,
    );
  }

  /** Records a collective issued by the layer's named communicator, moving `input` into `result`. */
  recordCollective(collective: PlannedCollective, input: ShapeTensor, result: ShapeTensor): void {
    const named = this.pending;
    // A ring exchange's input may be the previous exchange's result: it starts once that has arrived.
    const writtenBy = this.writer.get(input) ?? this.madeBy.get(input);
    this.madeBy.set(result, this.ops.length);
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
      ...(named.chunk !== undefined && { chunk: named.chunk, after: writtenBy === undefined ? [] : [writtenBy] }),
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
  kernel<A>(op: OpSpec, spec: KernelSpec<KernelName, A>, tensors: readonly ShapeTensor[], args: A): void {
    const dims = checkKernelShapes(
      spec,
      tensors.map((t) => t.name),
      tensors.map((t) => t.shape),
    );
    const out = tensors[writtenBindings(spec)[0]];
    this.record(
      spec.name,
      op,
      (spec.planned?.reads ?? readBindings(spec)).map((k) => tensors[k]),
      out,
      spec.planned?.outShape?.(dims, args) ?? out.shape,
    );
  }
  gemm(op: OpSpec, p: GemmProblem, a: ShapeTensor, b: ShapeTensor, c: ShapeTensor): void {
    if (!op.gemm)
      throw new Error(`PlanBackend: the GEMM ${op.label} does not say which product it computes (OpSpec.gemm).`);
    this.gemmProblems.push(p);
    const after = this.chunkDeps(op, [a, b], c);
    this.push(
      op,
      {
        kind: 'gemm',
        inShapes: [a.shape, b.shape],
        outShape: c.shape,
        flops: gemmFlops(p),
        gemm: { site: op.gemm, M: p.M, N: p.N, K: p.K, batch: p.batch, flops: gemmFlops(p) },
      },
      after,
    );
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
    const result = { name: `${x.name}.${op}`, shape: out };
    this.plan.recordCollective(
      {
        op,
        ...extra,
        inShape: x.shape,
        outShape: out,
        groupSize: this.size,
        payloadBytes: bytes,
        ringBytesSent: ringBytesSent(op, bytes, this.size),
        mapping: '',
      },
      x,
      result,
    );
    return result;
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
  async ringExchange(x: ShapeTensor): Promise<ShapeTensor> {
    return this.record('ringExchange', x, x.shape, {});
  }
  async barrier(): Promise<void> {
    this.record('barrier', { name: 'barrier', shape: [] }, [], {});
  }
  async shard(x: ShapeTensor, dim: number): Promise<ShapeTensor> {
    return { name: `${x.name}.shard`, shape: this.along(x, dim, 'split') };
  }
}
