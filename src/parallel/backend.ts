import type { GemmProblem } from '../reference/gemm.ts';
import type { KernelSpec } from '../reference/kernel-spec.ts';
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
   * Runs registered kernel `spec` (src/reference/kernel-registry.ts): `tensors` in its binding
   * order, outputs included (several written bindings are several outputs), `args` its non-tensor
   * arguments. The GPU dispatches its shader, the CPU runs its twin, the plan records its cost.
   */
  kernel<A>(op: OpSpec, spec: KernelSpec<KernelName, A>, tensors: readonly T[], args: A): void;
  /** C (+)= op(A)·op(B) on strided views (see GemmProblem). */
  gemm(op: OpSpec, p: GemmProblem, a: T, b: T, c: T): void;
  /** Waits until everything issued has run. */
  flush(): Promise<void>;
}
