import type { CollectiveOp, ReduceOp } from '../comm/collectives.ts';
import { kernelSpecs, type KernelName } from '../reference/kernel-registry.ts';
import type { LayerConfig } from './config.ts';
import type { TpChunk } from './tp-overlap.ts';
import type { WeightName } from './weight-names.ts';

/**
 * Which part of the step an op belongs to: the forward pass, the backward pass, or the gradient
 * reductions after backward (Megatron's `finalize_model_grads`, e.g. the replicated RMSNorm
 * weight gradients under SP).
 */
export type OpPhase = 'forward' | 'backward' | 'finalize';

/** The two passes a view shows: the finalize reductions belong to the backward pass. */
export type StepPass = 'forward' | 'backward';

/** The pass an op of `phase` is shown and counted in. */
export const passOf = (phase: OpPhase): StepPass => (phase === 'forward' ? 'forward' : 'backward');

/** What an op is: a GEMM, another compute kernel (norm, softmax, RoPE, SwiGLU, add, embedding, cross-entropy pieces), or a collective. */
export type OpKind = PlannedOp['kind'];

/**
 * What a compute op produces: an activation (forward), the gradient of an activation (dgrad), or
 * the gradient of a weight (wgrad). A collective carries the role of the tensor it moves.
 */
export type OpRole = 'forward' | 'dgrad' | 'wgrad';

/**
 * How an op's work is split across the t ranks (Megatron's tensor parallelism):
 * `column` — ColumnParallelLinear: the weight's output dim split, outputs split along the last dim
 * (qkv, mlp gate/up, the output layer over the vocabulary), and the local ops on such outputs (SwiGLU);
 * `row` — RowParallelLinear: the weight's input dim split, outputs partial sums (attn.proj, mlp.down);
 * `heads` — per-head attention work on this rank's query heads and KV groups (scores, softmax, context, RoPE);
 * `vocab` — this rank's rows of the padded vocabulary (VocabParallelEmbedding, vocab-parallel cross entropy);
 * `sequence` — this rank's tokens [s/t, b, h] under sequence parallelism (norms, residuals, SP collectives);
 * `replicated` — the same full tensor on every rank (norms and residuals without SP).
 */
export type OpSplit = 'column' | 'row' | 'heads' | 'vocab' | 'sequence' | 'replicated';

/**
 * How an op may overlap communication, as data (Megatron's asynchronous dgrad all-reduce in
 * `LinearWithGradAccumulationAndAsyncCommunication.backward`, layers.py): with the schedule's
 * overlap option, an `async` collective holds only the comm stream; the compute ops next to it
 * marked `underAsync` (weight gradients: they do not read its result) run under it; the first op
 * after them waits for it.
 */
export interface OpOverlap {
  /** A collective the layer issues asynchronously and waits on later. */
  readonly async: boolean;
  /** A compute op that does not read an adjacent asynchronous collective's result, so it may run under it. */
  readonly underAsync: boolean;
}

/**
 * The products C = A·B the layer's GEMMs compute: a linear's output (q, k, v, proj, gate, up, down,
 * logits; A its input, B its weight; qkv: linear_qkv as one GEMM over the rank's even slice of the
 * interleaved columns, when groups < t) or a core-attention product per head (scores = Q·Kᵀ,
 * context = P·V).
 */
export type GemmProduct = 'q' | 'k' | 'v' | 'qkv' | 'scores' | 'context' | 'proj' | 'gate' | 'up' | 'down' | 'logits';

/**
 * Which GEMM of the layer an op is — the same at every degree, whatever its label: its product
 * and what it computes of it: `C` the product itself (forward), `dA` the gradient of A (a linear's
 * dgrad; dQ of the scores, dP of the context), `dB` the gradient of B (a linear's wgrad; dK, dV).
 */
export interface GemmSite {
  readonly product: GemmProduct;
  readonly computes: 'C' | 'dA' | 'dB';
}

/** A GEMM's local problem on one rank: [M,K]·[K,N] per batch; flops = 2·M·N·K·batch; `site` which GEMM of the layer it is. */
export interface PlannedGemm {
  readonly site: GemmSite;
  readonly M: number;
  readonly N: number;
  readonly K: number;
  readonly batch: number;
  readonly flops: number;
}

/**
 * A collective as the ring model sees it. payloadBytes is S of the nccl-tests convention: the
 * full tensor (all-reduce: the buffer; reduce-scatter: its input; all-gather: its output).
 * ringBytesSent is what each rank sends on a ring: all-reduce 2(t−1)/t·S, reduce-scatter and
 * all-gather (t−1)/t·S, broadcast S (pipelined), barrier 0.
 */
export interface PlannedCollective {
  readonly op: CollectiveOp;
  readonly reduce?: ReduceOp;
  readonly dim?: number;
  readonly inShape: readonly number[];
  readonly outShape: readonly number[];
  readonly groupSize: number;
  readonly payloadBytes: number;
  readonly ringBytesSent: number;
  /** The Megatron mapping it implements, e.g. "reduceFromTensorParallelRegion (g)". */
  readonly mapping: string;
}

/**
 * The compute kernels other than GEMM that a rank's step runs, by name (one descriptor per kernel
 * in src/reference/kernel-registry.ts, run by Backend.kernel; the backward and cross-entropy
 * pieces are kernels of their own).
 */
export const kernelNames = Object.keys(kernelSpecs) as readonly KernelName[];

export type { KernelName };

/**
 * What every op of a rank's step carries, in execution order. `name` is the label in the trace
 * ("qkv.dgrad"): nothing decides from it.
 */
interface PlannedOpBase {
  readonly index: number;
  readonly phase: OpPhase;
  readonly name: string;
  readonly role: OpRole;
  readonly split: OpSplit;
  /** The parameter the op reads or whose gradient it writes (a GEMM's weight, a norm's gain); absent when none. */
  readonly weight?: WeightName;
  /** The Megatron module or mapping it implements ("ColumnParallelLinear", "reduceFromTensorParallelRegion (g) — …"). */
  readonly megatron: string;
  readonly overlap: OpOverlap;
  /** Under chunked TP overlap: which chunk of its collective or GEMM the op is (tp-overlap.ts); absent otherwise. */
  readonly chunk?: TpChunk;
  /**
   * Chunked ops only, what they wait for besides their stream's order (op indices): a chunked
   * collective, the op that wrote its input (it starts then, not after the compute ops listed
   * before it); a chunked compute op, the chunked collectives whose results it reads.
   */
  readonly after?: readonly number[];
  readonly inShapes: readonly (readonly number[])[];
  readonly outShape: readonly number[];
  readonly flops: number;
}

/** A GEMM of the step: its local problem and which GEMM of the layer it is. */
export interface PlannedGemmOp extends PlannedOpBase {
  readonly kind: 'gemm';
  readonly gemm: PlannedGemm;
}

/** A non-GEMM compute kernel of the step (norm, softmax, RoPE, SwiGLU, add, embedding, cross-entropy pieces). */
export interface PlannedKernelOp extends PlannedOpBase {
  readonly kind: 'kernel';
  readonly kernel: KernelName;
}

/** A collective of the step, as the ring model sees it. */
export interface PlannedCollectiveOp extends PlannedOpBase {
  readonly kind: 'collective';
  readonly collective: PlannedCollective;
}

/** One op of a rank's step: a discriminated union on `kind`, each kind with its required payload. */
export type PlannedOp = PlannedGemmOp | PlannedKernelOp | PlannedCollectiveOp;

/** What one rank owns of the logical model ([start, end) ranges in global indices). */
export interface RankOwnership {
  readonly rank: number;
  /** Query heads [start, end). */
  readonly heads: readonly [number, number];
  /** Global KV query groups this rank's attention reads (groups < t: one, taken from the gathered QKV). */
  readonly kvGroups: readonly number[];
  /**
   * Columns [start, end) of linear_qkv's output [s, b, (heads + 2·groups)·d] this rank computes, in
   * Megatron's per-group interleaved layout (qkv-layout.ts): W/t of them, each owned by one rank.
   */
  readonly qkvCols: readonly [number, number];
  /** FFN columns of gate and up (rows of down) [start, end). */
  readonly ffn: readonly [number, number];
  /** Vocabulary rows [start, end) of the padded vocabulary; [0, 0) without a vocabulary. */
  readonly vocab: readonly [number, number];
  /** Sequence positions [start, end) of the [s/t, b, h] regions under SP; [0, s) without. */
  readonly tokens: readonly [number, number];
}

/** The plan: the config it was made for, who owns what, and every rank's ops (the same list on every rank). */
export interface LayerPlan {
  readonly config: LayerConfig;
  /** Vocabulary padded up to a multiple of t (Megatron pads the embedding); 0 without one. */
  readonly paddedVocab: number;
  readonly ranks: readonly RankOwnership[];
  readonly ops: readonly PlannedOp[];
}

/** Narrows an op to a GEMM. */
export const isGemmOp = (op: PlannedOp): op is PlannedGemmOp => op.kind === 'gemm';

/** Narrows an op to a collective. */
export const isCollectiveOp = (op: PlannedOp): op is PlannedCollectiveOp => op.kind === 'collective';

/** The GEMM of an op that must be one; throws naming the op otherwise. */
export function gemmOf(op: PlannedOp): PlannedGemm {
  if (op.kind !== 'gemm') throw new Error(`op ${op.index} (${op.name}) is a ${op.kind}, not a GEMM.`);
  return op.gemm;
}

/** The collective of an op that must be one; throws naming the op otherwise. */
export function collectiveOf(op: PlannedOp): PlannedCollective {
  if (op.kind !== 'collective') throw new Error(`op ${op.index} (${op.name}) is a ${op.kind}, not a collective.`);
  return op.collective;
}
