import { overlapLossMs } from '../../hardware/overlap-cost.ts';
import { fsdpForcedOverlaps } from '../../megatron/fsdp.ts';
import type { ParamGatherDispatch } from '../../megatron/megatron-release.ts';
import type { Degrees, TrainingSetup } from '../../megatron/training-setup.ts';
import {
  defaultBucketSize,
  gradBuckets,
  gatherOrder,
  gradSync,
  paramGatherExposedMs,
  type ChunkGrads,
  type GradSync,
} from '../links/data-parallel.ts';
import type { TpUnderSharing } from '../links/link-sharing.ts';
import { dpSharding } from './fsdp-step.ts';

/** One stage's simulated ops in run order (pipelineTimes' orders[i], t0[i], t1[i]): chunk, forward (≠ 0) or backward, ms. */
export interface StageOps {
  readonly chunk: ArrayLike<number>;
  readonly forward: ArrayLike<number | boolean>;
  readonly t0: ArrayLike<number>;
  readonly t1: ArrayLike<number>;
}

/** The data-parallel flags of a step and its DP group, d = DP · cp. */
export interface DpOptions {
  readonly overlapGradReduce: boolean;
  readonly overlapParamGather: boolean;
  readonly distributedOptimizer: boolean;
  readonly dpGroup: number;
  readonly bucketSize: number;
  /**
   * align_grad_reduce (on by default, training.py:3540-3543) with the interleaved schedule: a
   * chunk's buckets are launched together by grad_sync_func after a backward, not one by one as
   * their gradients complete (schedules.py:1395-1428, below). 1F1B has no effect of it here: stages
   * > 0 have one bucket per chunk, and stage 0 keeps launching as the gradients complete.
   */
  readonly alignGradReduce?: boolean;
  /**
   * align_param_gather: with virtual stages the gathers of chunks 0 and 1 are dispatched at the
   * step's start on every stage (schedules.py:1192-1194), so they can hide in the warm-up; without
   * them arguments.py:976-979 forces it off and a stage's gather is dispatched by its first forward
   * pre-hook (paramGatherStartWaitMs).
   */
  readonly alignParamGather?: boolean;
}

/** The DP options of a setup with t, p, v, cp (`deg`): Megatron's defaults for the bucket and the alignments; with FSDP, its optimizer sharding. */
export function dpOptionsOf(
  setup: Pick<
    TrainingSetup,
    'overlapGradReduce' | 'overlapParamGather' | 'distributedOptimizer' | 'bucketSize' | 'fsdp'
  >,
  deg: Pick<Degrees, 'dp' | 'cp' | 'vpp'>,
): DpOptions {
  const dpGroup = deg.dp * deg.cp;
  // Megatron-FSDP turns its overlaps on by itself (fsdp.ts fsdpForcedOverlaps).
  const forced = fsdpForcedOverlaps(setup.fsdp);
  const overlapGradReduce = (setup.overlapGradReduce ?? false) || forced.overlapGradReduce;
  return {
    overlapGradReduce,
    overlapParamGather: (setup.overlapParamGather ?? false) || forced.overlapParamGather,
    // FSDP: a sharded optimizer syncs the tail's gradients by reduce-scatter and gathers its parameters (fsdp-step.ts).
    distributedOptimizer: dpSharding(setup).optimizer,
    dpGroup,
    bucketSize: setup.bucketSize ?? defaultBucketSize(dpGroup),
    alignGradReduce: overlapGradReduce && deg.vpp > 1,
    alignParamGather: deg.vpp > 1,
  };
}

/**
 * Whether the parameter gather is part of the simulated schedule (paramGatherStartWaitMs): with
 * --overlap-param-gather and the distributed optimizer, without align_param_gather and with p > 1
 * (at p = 1 the wait before the only stage's first forward is added to the step as before).
 */
export const gatherInSchedule = (o: DpOptions, p: number): boolean =>
  o.overlapParamGather && o.distributedOptimizer && o.dpGroup > 1 && !o.alignParamGather && p > 1;

/**
 * What stage i's first forward waits for its parameters without align_param_gather: the first
 * forward pre-hook dispatches the first bucket's all-gather and waits for it
 * (distributed_data_parallel.py:458-464 → param_and_grad_buffer.py:551-556: finish_param_sync
 * starts a bucket not yet dispatched); each wait then dispatches the next bucket (:558-567), which
 * hides under the modules of the buckets before it. Wait = g_first + max(0, Σ rest − forward), the
 * whole of it on stages > 0, whose parameters are one bucket (training.py:1859-1868). The simulated
 * schedule starts the stage's first forward that much later, so the delay passes down the pipeline.
 */
export function paramGatherStartWaitMs(bucketMs: readonly number[], firstForwardMs: number): number {
  return paramGatherExposedMs(bucketMs, true, 0, firstForwardMs);
}

/**
 * Stage i's first forward under its release's dispatch (megatron-release.ts): `readyMs`, the
 * earliest it may start, and `waitMs`, what it then waits. `first-forward` (core_v0.19):
 * ready 0, wait paramGatherStartWaitMs. `step-start` (core_r0.8): the first bucket was dispatched
 * at the step's start, so it lands at g_first however late the stage's input comes; the rest is
 * dispatched from the pre-hooks as before: ready g_first, wait max(0, Σ rest − forward).
 */
export function paramGatherStart(
  bucketMs: readonly number[],
  firstForwardMs: number,
  dispatch: ParamGatherDispatch,
): { readonly readyMs: number; readonly waitMs: number } {
  if (dispatch === 'first-forward') return { readyMs: 0, waitMs: paramGatherStartWaitMs(bucketMs, firstForwardMs) };
  const rest = bucketMs.slice(1).reduce((a, x) => a + x, 0);
  return { readyMs: bucketMs[0] ?? 0, waitMs: Math.max(0, rest - firstForwardMs) };
}

/** One stage's gradient sync on its DP stream (stageGradSync). */
export interface StageGradSync {
  /** When the stage's last op ends, ms. */
  readonly stageEndMs: number;
  /** Index of the stage's first forward (−1: none). */
  readonly firstForward: number;
  readonly chunks: readonly ChunkGrads[];
  readonly sync: GradSync;
  /** Compute lost to the buckets run before the last backward ends: overlapLossMs(comm − exposed, slowdown). */
  readonly overlapCostMs: number;
}

/**
 * Stage `stage`'s gradient sync: each chunk's parameters `chunkParams[c]` in buckets (gradBuckets),
 * completing over the chunk's last backward, each priced at gradUs(params) on the DP stream
 * (gradSync; d = 1: no sync); with --overlap-grad-reduce the buckets run before the stage's end
 * slow the backward under them by `gradSlowdown` (overlapLossMs).
 */
export function stageGradSync(
  stage: number,
  ops: StageOps,
  chunkParams: readonly number[],
  o: DpOptions,
  gradUs: (params: number) => number,
  gradSlowdown: number,
): StageGradSync {
  const { t0, t1 } = ops;
  let stageEndMs = 0;
  for (let j = 0; j < t1.length; j++) stageEndMs = Math.max(stageEndMs, t1[j]!);
  // The last backward of each chunk and the stage's first forward (op indices, −1: none); the
  // stage's backwards in run order.
  const lastBackward = new Array<number>(chunkParams.length).fill(-1);
  const backwards: number[] = [];
  let firstForward = -1;
  for (let j = 0; j < ops.chunk.length; j++)
    if (!ops.forward[j]) {
      lastBackward[ops.chunk[j]!] = backwards.length;
      backwards.push(j);
    } else if (firstForward < 0) firstForward = j;
  // align_grad_reduce: backward_step_helper_postprocess of the stage's k-th backward launches the
  // chunk whose last backward is the (k − pipeline rank)-th (schedules.py:1418-1428), so every
  // stage launches at once; chunks not launched by the last backward go after it (:2036-2041).
  const alignedAt = (b: number): number => {
    const k = b + stage;
    return k < backwards.length ? t1[backwards[k]!]! : stageEndMs;
  };
  const chunks = chunkParams.map((params, ch) => {
    const b = lastBackward[ch]!;
    const buckets = gradBuckets(params, {
      overlapGradReduce: o.overlapGradReduce,
      stage,
      chunk: ch,
      bucketSize: o.bucketSize,
    });
    if (b < 0) return { buckets, lastBackward: { t0: stageEndMs, t1: stageEndMs } };
    if (o.alignGradReduce) {
      const at = alignedAt(b);
      return { buckets, lastBackward: { t0: at, t1: at } };
    }
    const j = backwards[b]!;
    return { buckets, lastBackward: { t0: t0[j]!, t1: t1[j]! } };
  });
  const sync = gradSync(chunks, o.overlapGradReduce, (p) => (o.dpGroup > 1 ? gradUs(p) : 0), stageEndMs);
  const overlapCostMs =
    o.overlapGradReduce && o.dpGroup > 1 ? overlapLossMs(Math.max(0, sync.commMs - sync.exposedMs), gradSlowdown) : 0;
  return { stageEndMs, firstForward, chunks, sync, overlapCostMs };
}

/** The distributed optimizer's parameter all-gather on one stage (stageParamGather). */
export interface StageParamGather {
  /** Not hidden (paramGatherExposedMs), ms. */
  readonly exposedMs: number;
  /** Compute lost to the part hidden under the first forward (overlapLossMs), ms. */
  readonly overlapCostMs: number;
  /** Beside TP on a shared link: the TP link time the gather takes, what of it runs past the forward, the forward's delay. */
  readonly tpShare?: { readonly sharedMs: number; readonly exposedMs: number; readonly computeDelayMs: number };
}

/**
 * The parameter all-gather of stage `g`'s buckets (the distributed optimizer, d > 1; otherwise
 * nothing), each priced at paramUs(params): exposed as paramGatherExposedMs has it (the first
 * forward's start is the warm-up idle time with align_param_gather, none without it). `inSchedule`
 * (gatherInSchedule): the wait is in the simulated schedule already, exposedMs 0 here. With
 * --overlap-param-gather the part hidden past that idle time runs under the first forward,
 * G = min(forward, max(0, hidden − idle)), and costs
 * overlapLossMs(G, gatherSlowdown); beside TP on a shared link that forward runs G·slowF later and
 * the TP collectives take G·uF of link time from the gather, exposed where G + G·uF passes the forward.
 */
export function stageParamGather(
  g: StageGradSync,
  ops: StageOps,
  o: DpOptions,
  paramUs: (params: number) => number,
  gatherSlowdown: number,
  tpShare: TpUnderSharing | undefined,
  inSchedule = false,
): StageParamGather {
  if (!(o.distributedOptimizer && o.dpGroup > 1)) return { exposedMs: 0, overlapCostMs: 0 };
  const { t0, t1 } = ops;
  const first = g.firstForward;
  const gather = g.chunks.flatMap((ch) => gatherOrder(ch.buckets).map((p) => paramUs(p) / 1e3));
  // Without align_param_gather nothing is dispatched before the first forward's pre-hook: no idle hides it.
  const idleMs = first >= 0 && (o.alignParamGather ?? true) ? t0[first]! : 0;
  const waitMs = paramGatherExposedMs(gather, o.overlapParamGather, idleMs, first >= 0 ? t1[first]! - t0[first]! : 0);
  // In the schedule (gatherInSchedule) the wait already delays the stage's first forward.
  const exposedMs = inSchedule ? 0 : waitMs;
  if (!(o.overlapParamGather && first >= 0)) return { exposedMs, overlapCostMs: 0 };
  const forwardMs = t1[first]! - t0[first]!;
  const hidden = gather.reduce((a, x) => a + x, 0) - waitMs;
  const underForward = Math.min(forwardMs, Math.max(0, hidden - idleMs));
  const overlapCostMs = overlapLossMs(underForward, gatherSlowdown);
  if (!tpShare) return { exposedMs, overlapCostMs };
  const sharedMs = underForward * tpShare.uF;
  return {
    exposedMs,
    overlapCostMs,
    tpShare: {
      sharedMs,
      exposedMs: Math.max(0, underForward + sharedMs - forwardMs),
      computeDelayMs: underForward * tpShare.slowF,
    },
  };
}
