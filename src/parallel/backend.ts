import type { ColumnBlock } from '../reference/copy-cols.ts';
import type { GemmProblem } from '../reference/gemm.ts';
import type { GridKernelSpec } from '../reference/kernel-spec.ts';
import type { GemmSite, KernelName, OpPhase, OpRole, OpSplit } from './plan-types.ts';
import type { TpChunk } from './tp-overlap.ts';
import type { WeightName } from './weight-names.ts';

/**
 * What the layer says about an op when it issues it: its label in the trace and the plan, and
 * what it is (the plan's typed fields, see PlannedOp). Labels are for people; the fields are for code.
 */
export interface OpSpec {
  readonly label: string;
  readonly split: OpSplit;
  readonly weight?: WeightName;
  /** Default: 'forward' in the forward pass, 'dgrad' after it; weight-gradient kernels are always 'wgrad'. */
  readonly role?: OpRole;
  /** Default: by split for GEMMs (ColumnParallelLinear, RowParallelLinear, core attention), by kernel otherwise. */
  readonly megatron?: string;
  /** GEMMs only (required there): which GEMM of the layer it is (a linear's come from its LinearSpec). */
  readonly gemm?: GemmSite;
  /** Collectives only: issued asynchronously and waited on later (Megatron's async dgrad all-reduce, the SP re-gather). */
  readonly async?: boolean;
  /**
   * Compute only: does not read the adjacent asynchronous collective's result, so it may run under
   * it. Default: weight gradients do; the dgrad GEMMs of a ColumnParallelLinear under SP also run
   * under the re-gather of its input (issued before them, waited after them).
   */
  readonly underAsync?: boolean;
  /** Chunked TP overlap only: which chunk of the chunked collective or GEMM this op is (tp-overlap.ts). */
  readonly chunk?: TpChunk;
}

/** An OpSpec from its label, split and any other fields. */
export const opSpec = (label: string, split: OpSplit, more: Omit<OpSpec, 'label' | 'split'> = {}): OpSpec => ({
  label,
  split,
  ...more,
});

/** Options of the forward softmax (attention scores [heads·b, sq, sk]). */
export interface SoftmaxArgs {
  readonly scale: number;
  readonly causal: boolean;
  /** Global index of the first local row (a rank holding rows [r0, r0 + n)). */
  readonly rowOffset: number;
}

/**
 * The compute a rank's layer needs, over a tensor handle T. Three implementations run the same
 * layer code: WebGPU kernels (GpuTensor), the float64 CPU twins rounded to float32 (HostTensor),
 * and a shape-only recorder that turns the layer into its plan. `op` names each call in the
 * trace and the plan ("qkv.dgrad"). Outputs are written into tensors the caller allocated.
 */
export interface Backend<T> {
  readonly kind: 'gpu' | 'cpu' | 'plan';
  /** Forward or backward: which pass the following ops belong to. */
  phase: OpPhase;
  /** A tensor of `shape`, zeros or `data` (float32 backends round float64 data once). */
  tensor(name: string, shape: readonly number[], data?: Float32Array | Float64Array): T;
  shapeOf(t: T): readonly number[];
  /** The tensor's values (after everything issued before it has run). */
  read(t: T): Promise<Float32Array>;
  /** Frees a tensor's memory; it must not be used afterwards. */
  release(t: T): void;
  /**
   * Runs a grid kernel from its descriptor alone (src/reference/kernel-spec.ts): `tensors` in its
   * binding order, `args` what its Params and twin take. A new elementwise or row kernel needs no
   * method of its own: the GPU dispatches its shader, the CPU runs its twin, the plan records its cost.
   */
  kernel<A>(op: OpSpec, spec: GridKernelSpec<KernelName, A>, tensors: readonly T[], args: A): void;
  /** C (+)= op(A)·op(B) on strided views (see GemmProblem). */
  gemm(op: OpSpec, p: GemmProblem, a: T, b: T, c: T): void;
  /** y = x / rms(x) · g over the last dim h; rstd [rows] saved for backward. */
  rmsnorm(op: OpSpec, x: T, g: T, y: T, rstd: T, eps: number): void;
  /** dx of rmsnorm given the saved rstd. */
  rmsnormBackward(op: OpSpec, x: T, g: T, rstd: T, dy: T, dx: T): void;
  /** dg [h] = Σ_rows dy · x · rstd over this rank's rows (a partial sum under SP). */
  rmsnormWeightGrad(op: OpSpec, x: T, rstd: T, dy: T, dg: T): void;
  /** Rotate-half RoPE on [s, b, heads, d]; position = positionOffset + local s index. */
  rope(op: OpSpec, x: T, out: T, base: number, positionOffset: number): void;
  /** RoPE backward: rotation by −θ. */
  ropeBackward(op: OpSpec, dy: T, dx: T, base: number, positionOffset: number): void;
  /** Softmax over the last dim with scale and causal mask. */
  softmax(op: OpSpec, x: T, y: T, args: SoftmaxArgs): void;
  /** dx = scale · y ⊙ (dy − rowsum(dy ⊙ y)). */
  softmaxBackward(op: OpSpec, y: T, dy: T, dx: T, scale: number): void;
  /** y = silu(g) ⊙ u. */
  swiglu(op: OpSpec, g: T, u: T, y: T): void;
  /** dg, du of swiglu. */
  swigluBackward(op: OpSpec, g: T, u: T, dy: T, dg: T, du: T): void;
  /** out = a + b. */
  add(op: OpSpec, a: T, b: T, out: T): void;
  /** acc += b. */
  addInPlace(op: OpSpec, acc: T, b: T): void;
  /** dst[r, to.c0 + j] = src[r, from.c0 + j] for r < rows, j < n: a column block copied between [rows, w] matrices. */
  copyCols(op: OpSpec, src: T, dst: T, rows: number, n: number, from: ColumnBlock, to: ColumnBlock): void;
  /** out[t] = table[id_t − vocabStart] for ids in this rank's rows, else 0. ids [s, b], table [vLocal, h]. */
  embedding(op: OpSpec, ids: T, table: T, out: T, vocabStart: number): void;
  /** dtable[v] = Σ_{t: id_t = vocabStart + v} dy[t]. */
  embeddingBackward(op: OpSpec, ids: T, dy: T, dtable: T, vocabStart: number): void;
  /** Per-row max of this rank's logits [rows, vLocal] → [rows]. */
  ceLocalMax(op: OpSpec, logits: T, out: T): void;
  /** Per-row Σ exp(x − m) for the global max m → [rows]. */
  ceLocalSumExp(op: OpSpec, logits: T, globalMax: T, out: T): void;
  /** Per-row target logit when the target is in this rank's vocabulary range, else 0. */
  ceTargetLogit(op: OpSpec, logits: T, targets: T, out: T, vocabStart: number): void;
  /** scale · (softmax − onehot) on this rank's logits. */
  ceGrad(
    op: OpSpec,
    logits: T,
    targets: T,
    globalMax: T,
    globalSum: T,
    dlogits: T,
    vocabStart: number,
    scale: number,
  ): void;
  /** Per-row loss log S + m − z. */
  ceLoss(op: OpSpec, globalMax: T, globalSum: T, targetLogit: T, loss: T): void;
  /** Waits until everything issued has run. */
  flush(): Promise<void>;
}
