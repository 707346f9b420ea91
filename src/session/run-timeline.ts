import type { Interconnect } from '../hardware/interconnect.ts';
import { measuredCommMs, modeledCommMs } from '../schedule/durations.ts';
import { scheduleStep, type Timeline } from '../schedule/schedule.ts';
import { median } from '../core/stats.ts';
import type { LayerRun } from './layer-run.ts';

/**
 * [rank][opIndex] kernel times (ms) for the schedule: every rank runs the same ops on the same
 * local shapes, so differences between the ranks' timings (each timed alone, one after another)
 * are noise of this shared machine; each op gets the median over ranks on every rank.
 */
export function computeMsByOp(run: LayerRun): number[][] {
  const compute = run.plan.ops.filter((o) => o.kind !== 'collective');
  const row = run.plan.ops.map(() => 0);
  compute.forEach((o, i) => (row[o.index] = median(run.computeTimes.map((t) => t.ops[i]?.ms ?? 0))));
  return run.plan.ranks.map(() => [...row]);
}

/** The run's step scheduled with measured kernels and comm either measured here or modeled on `link`. */
export function runTimeline(run: LayerRun, comm: 'measured' | Interconnect, overlap: boolean): Timeline {
  const commMs = comm === 'measured' ? measuredCommMs(run.plan, run.commEvents) : modeledCommMs(run.plan, comm);
  return scheduleStep(run.plan, { computeMs: computeMsByOp(run), commMs }, { overlap });
}
