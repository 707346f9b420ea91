import type { CollectiveOp, ReduceOp } from '../comm/collectives.ts';
import type { LayerConfig } from './config.ts';

/** Forward or backward pass of the step. */
export type OpPhase = 'forward' | 'backward';

/** A GEMM's local problem on one rank: [M,K]·[K,N] per batch; flops = 2·M·N·K·batch. */
export interface PlannedGemm {
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
 * One op of a rank's step, in execution order. `name` is the trace name ("qkv.dgrad"),
 * `kernel` the kernel that runs it ("gemm", "rmsnorm", …; absent for collectives).
 */
export interface PlannedOp {
  readonly index: number;
  readonly phase: OpPhase;
  readonly name: string;
  readonly kind: 'gemm' | 'kernel' | 'collective';
  readonly kernel?: string;
  readonly inShapes: readonly (readonly number[])[];
  readonly outShape: readonly number[];
  readonly flops: number;
  readonly gemm?: PlannedGemm;
  readonly collective?: PlannedCollective;
}

/** What one rank owns of the logical model ([start, end) ranges in global indices). */
export interface RankOwnership {
  readonly rank: number;
  /** Query heads [start, end). */
  readonly heads: readonly [number, number];
  /** Global KV query groups this rank holds (one replicated group when groups < t). */
  readonly kvGroups: readonly number[];
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
