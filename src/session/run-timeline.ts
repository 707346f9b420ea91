import type { Interconnect } from '../hardware/interconnect.ts';
import { measuredCommMs, modeledCommMs } from '../schedule/durations.ts';
import { scheduleStep, type Timeline } from '../schedule/schedule.ts';
import { medianOverRanks, scheduleUnderTransfer } from '../schedule/transfer-slowdown.ts';
import { median } from '../core/stats.ts';
import type { LayerRun } from './layer-run.ts';
import type { ComputeTiming } from '../ranks/layer-programs.ts';
import type { RankSlowdown } from '../core/rank-slowdown.ts';

/**
 * [rank][opIndex] kernel times (ms) for the schedule: every rank runs the same ops on the same
 * local shapes, so differences between the ranks' timings (each timed alone, one after another)
 * are noise of this shared machine; each op gets the median over the timed ranks on every rank.
 * A slowed rank (#slow, which dispatches each kernel f times) is the exception: it gets its own
 * measured times, and the median is over the other timed ranks.
 */
export function computeMsByOp(run: LayerRun): number[][] {
  const compute = run.plan.ops.filter((o) => o.kind !== 'collective');
  const rowOf = (timings: readonly ComputeTiming[]): number[] => {
    const row = run.plan.ops.map(() => 0);
    compute.forEach((o, i) => (row[o.index] = median(timings.map((t) => t.ops[i]?.ms ?? 0))));
    return row;
  };
  const slowRank = run.slow && run.slow.factor > 1 ? run.slow.rank : undefined;
  const own = run.computeTimes.filter((t) => t.rank === slowRank);
  const rest = run.computeTimes.filter((t) => t.rank !== slowRank);
  if (slowRank !== undefined && (!own.length || !rest.length))
    throw new Error(
      `computeMsByOp: rank ${slowRank} is slowed, so it and another rank must be timed; timed ranks: ${run.computeTimes.map((t) => t.rank).join(', ') || 'none'}.`,
    );
  const row = rowOf(rest);
  const slowRow = own.length ? rowOf(own) : row;
  return run.plan.ranks.map(({ rank }) => [...(rank === slowRank ? slowRow : row)]);
}

/** The ranks a run must time: rank 0 (every rank runs the same shapes) and, under #slow, the slowed rank and one other. */
export function timingRanksFor(slow: RankSlowdown | null | undefined, t: number): number[] {
  if (!slow || slow.factor === 1) return [0];
  const other = slow.rank === 0 ? 1 : 0;
  return [...new Set([0, slow.rank, other])].filter((r) => r < t).sort((a, b) => a - b);
}

/**
 * The run's step scheduled with measured kernels and comm either measured here or modeled on
 * `link`. With comm measured here and the run's transferTimes, the kernels come from those (timed
 * in the step, each op's median over the ranks), and the ones under a transfer take their time
 * measured under it (scheduleUnderTransfer): on this machine compute and the ring share the cores. On a modeled
 * link the kernels are those timed alone, as on a cluster's GPUs.
 */
export function runTimeline(run: LayerRun, comm: 'measured' | Interconnect, overlap: boolean): Timeline {
  const commMs = comm === 'measured' ? measuredCommMs(run.plan, run.commEvents) : modeledCommMs(run.plan, comm);
  if (comm === 'measured' && run.transferTimes)
    return scheduleUnderTransfer(run.plan, medianOverRanks(run.transferTimes), commMs, { overlap });
  return scheduleStep(run.plan, { computeMs: computeMsByOp(run), commMs }, { overlap });
}
