import { collectiveTimeUs, type Interconnect } from '../../hardware/interconnect.ts';
import type { TrainDtype } from '../../hardware/dtype.ts';
import type { SystemSpec } from '../../hardware/systems.ts';
import { stateBytesPerParam } from '../../accounting/training-memory.ts';

/**
 * Data parallelism as Megatron-Core runs it (megatron/core/distributed/, core_v0.19.0).
 *
 * Buckets: training.py resolve_ddp_bucket_size (:1552-1567) sets bucket_size = max(40M, 1M · |dp_cp|)
 * parameters when --ddp-bucket-size is not given, |dp_cp| = DP · cp the data-parallel group with
 * context parallelism, and bucket_size = None (one bucket per model chunk) without
 * --overlap-grad-reduce; it also turns bucketing off on pipeline ranks > 0 and for model chunks
 * after the first (:1859-1868).
 * Collectives per bucket: without the distributed optimizer an all-reduce of the gradients;
 * with it a reduce-scatter of the gradients and, after the optimizer step, an all-gather of the
 * parameters (docs/user-guide/features/dist_optimizer.md), both over the DP × CP group.
 * Bytes per parameter (same doc): fp16 20 → 4 + 16/d, bf16 with fp32 gradients 18 → 6 + 12/d,
 * fp32 16 → 8 + 8/d: weights and gradients stay whole, the rest (fp32 main weights, fp16's fp32
 * main gradients, Adam's two moments) is divided by d.
 */
export const defaultBucketSize = (dpCpSize: number): number => Math.max(40_000_000, 1_000_000 * dpCpSize);

/** How a chunk's gradient buffer is cut into buckets. */
export interface BucketOptions {
  readonly overlapGradReduce: boolean;
  readonly stage: number;
  readonly chunk: number;
  /** Parameters per bucket (default defaultBucketSize(DP · cp)). */
  readonly bucketSize: number;
}

/** The buckets (parameter counts, in the order they become ready in backward) of one model chunk. */
export function gradBuckets(params: number, o: BucketOptions): number[] {
  if (params <= 0) return [];
  if (!o.overlapGradReduce || o.stage > 0 || o.chunk > 0) return [params];
  const n = Math.ceil(params / o.bucketSize);
  return Array.from({ length: n }, (_, i) => Math.min(o.bucketSize, params - i * o.bucketSize));
}

/**
 * A chunk's buckets in the order their parameters are all-gathered: the reverse of gradBuckets'
 * (forward order). Megatron lays the buffer out from the model's last parameter
 * (param_and_grad_buffer.py, parameters iterated `params[::-1]`, the remainder bucket last, holding
 * the first layers) and chains each bucket group's gather to the one before it in that layout
 * ("all-gathers happen in reverse order of buckets", distributed_data_parallel.py:304-315), so the
 * first bucket gathered is the last one laid out. core_v0.19.0.
 */
export const gatherOrder = (buckets: readonly number[]): number[] => [...buckets].reverse();

/** Bytes per parameter a GPU keeps: weights, gradients, optimizer state (÷ d with the distributed optimizer). */
export function stateBytes(
  dtype: TrainDtype,
  distributedOptimizer: boolean,
  d: number,
): { weights: number; grads: number; optimizer: number } {
  const per = stateBytesPerParam[dtype];
  return { ...per, optimizer: distributedOptimizer ? per.optimizer / d : per.optimizer };
}

/**
 * The DP group's collectives for one bucket, µs: the gradient sync and (distributed optimizer) the
 * parameter all-gather; the gradients in `gradBytes` per parameter (Megatron's DDP: its main_grad
 * buffer's, stateBytesPerParam; Megatron-FSDP and FSDP2: the parameters' dtype, fsdpStateBytes),
 * the parameters in `paramBytes` (the training dtype's; quantized parameters less,
 * projection/step/quantized-params.ts gatherBytesPerParam).
 */
export function bucketSyncUs(
  params: number,
  dtype: TrainDtype,
  distributedOptimizer: boolean,
  group: number,
  link: Interconnect,
  system: SystemSpec,
  gradBytes = stateBytesPerParam[dtype].grads,
  paramBytes = stateBytesPerParam[dtype].weights,
): { gradUs: number; paramUs: number } {
  if (group <= 1) return { gradUs: 0, paramUs: 0 };
  const call = (op: 'allReduce' | 'reduceScatter' | 'allGather', bytes: number): number =>
    system.collectiveBaseUs + collectiveTimeUs(op, bytes, group, link);
  return distributedOptimizer
    ? { gradUs: call('reduceScatter', params * gradBytes), paramUs: call('allGather', params * paramBytes) }
    : { gradUs: call('allReduce', params * gradBytes), paramUs: 0 };
}

/** One chunk's gradients: its buckets and the window (its last backward) in which they complete. */
export interface ChunkGrads {
  readonly buckets: readonly number[];
  /** The chunk's last backward op [t0, t1], ms; with overlap, bucket k is ready at t0 + (k+1)/n·(t1 − t0). */
  readonly lastBackward: { readonly t0: number; readonly t1: number };
}

/** A stage's gradient synchronisation on its DP communication stream. */
export interface GradSync {
  /** When the last bucket's collective ends, ms. */
  readonly endMs: number;
  /** Σ collective time, ms. */
  readonly commMs: number;
  /** Time past the stage's last backward that waits for the sync, ms. */
  readonly exposedMs: number;
  readonly buckets: number;
  /** When the stream is busy: its collectives merged where one starts as the last ends, ms. */
  readonly busy: readonly { readonly t0: number; readonly t1: number }[];
}

/**
 * The gradient sync of one pipeline stage: with --overlap-grad-reduce each bucket is issued when
 * its gradients complete (parameters filled in backward order, complete in proportion to the
 * last backward's progress; Megatron's register_grad_ready), one collective at a time on the
 * communication stream; without it every bucket is issued after the stage's last backward
 * (finalize_model_grads → finish_grad_sync). `syncUs(params)` prices one bucket.
 */
export function gradSync(
  chunks: readonly ChunkGrads[],
  overlap: boolean,
  syncUs: (params: number) => number,
  stageEndMs: number,
): GradSync {
  const ready: { at: number; ms: number }[] = [];
  for (const c of chunks) {
    const n = c.buckets.length;
    c.buckets.forEach((params, k) => {
      const at = overlap ? c.lastBackward.t0 + ((k + 1) / n) * (c.lastBackward.t1 - c.lastBackward.t0) : stageEndMs;
      ready.push({ at, ms: syncUs(params) / 1e3 });
    });
  }
  ready.sort((a, b) => a.at - b.at);
  let end = 0;
  let commMs = 0;
  const busy: { t0: number; t1: number }[] = [];
  for (const r of ready) {
    const start = Math.max(end, r.at);
    end = start + r.ms;
    commMs += r.ms;
    const last = busy.at(-1);
    if (last && last.t1 >= start) last.t1 = end;
    else busy.push({ t0: start, t1: end });
  }
  return {
    endMs: ready.length ? end : stageEndMs,
    commMs,
    exposedMs: Math.max(0, end - stageEndMs),
    buckets: ready.length,
    busy,
  };
}

/**
 * The parameter all-gather of the distributed optimizer before the next forward: without
 * --overlap-param-gather all of it in the optimizer step (exposed); with it bucket by bucket from
 * the forward pre-hooks: the first bucket must land before the stage's first forward (it can hide
 * only in the stage's warm-up idle time `idleMs`), the rest can also hide under that forward
 * (`forwardMs`).
 */
export function paramGatherExposedMs(
  bucketMs: readonly number[],
  overlap: boolean,
  idleMs: number,
  forwardMs: number,
): number {
  const total = bucketMs.reduce((a, b) => a + b, 0);
  if (!overlap) return total;
  return Math.max(0, (bucketMs[0] ?? 0) - idleMs, total - idleMs - forwardMs);
}
