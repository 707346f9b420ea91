import { overlapLossMs } from '../../hardware/overlap-cost.ts';
import { gradBuckets, gradSync, paramGatherExposedMs, type ChunkGrads, type GradSync } from '../links/data-parallel.ts';
import type { TpUnderSharing } from '../links/link-sharing.ts';

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
  // The last backward of each chunk and the stage's first forward (op indices, −1: none).
  const lastBackward = new Array<number>(chunkParams.length).fill(-1);
  let firstForward = -1;
  for (let j = 0; j < ops.chunk.length; j++)
    if (!ops.forward[j]) lastBackward[ops.chunk[j]!] = j;
    else if (firstForward < 0) firstForward = j;
  const chunks = chunkParams.map((params, ch) => {
    const b = lastBackward[ch]!;
    const buckets = gradBuckets(params, {
      overlapGradReduce: o.overlapGradReduce,
      stage,
      chunk: ch,
      bucketSize: o.bucketSize,
    });
    return { buckets, lastBackward: b >= 0 ? { t0: t0[b]!, t1: t1[b]! } : { t0: stageEndMs, t1: stageEndMs } };
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
 * forward's start is the warm-up idle time). With --overlap-param-gather the part hidden past that
 * idle time runs under the first forward, G = min(forward, max(0, hidden − idle)), and costs
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
): StageParamGather {
  if (!(o.distributedOptimizer && o.dpGroup > 1)) return { exposedMs: 0, overlapCostMs: 0 };
  const { t0, t1 } = ops;
  const first = g.firstForward;
  const gather = g.chunks.flatMap((ch) => ch.buckets.map((p) => paramUs(p) / 1e3));
  const exposedMs = paramGatherExposedMs(
    gather,
    o.overlapParamGather,
    first >= 0 ? t0[first]! : 0,
    first >= 0 ? t1[first]! - t0[first]! : 0,
  );
  if (!(o.overlapParamGather && first >= 0)) return { exposedMs, overlapCostMs: 0 };
  const forwardMs = t1[first]! - t0[first]!;
  const hidden = gather.reduce((a, x) => a + x, 0) - exposedMs;
  const underForward = Math.min(forwardMs, Math.max(0, hidden - t0[first]!));
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
