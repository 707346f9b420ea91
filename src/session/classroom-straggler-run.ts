import type { RankSlowdown } from '../core/rank-slowdown.ts';
import { configFromPreset } from '../parallel/config.ts';
import type { Timeline } from '../schedule/schedule.ts';
import { stepStragglers, type PlanCallKey } from '../schedule/step-stragglers.ts';
import type { StragglerAnalysis } from '../schedule/stragglers.ts';
import type { PoolLender, LayerWorkerPrograms } from './layer-run.ts';
import { runLayer } from './layer-run.ts';
import type { RankPool } from '../ranks/pool.ts';
import { runTimeline, timingRanksFor } from './run-timeline.ts';

/** The classroom's straggler run: its scheduled step (measured kernels and transport) and who waited for whom. */
export interface ClassroomStragglerRun {
  readonly slow: RankSlowdown;
  readonly timeline: Timeline;
  readonly stragglers: StragglerAnalysis<PlanCallKey>;
  /** The TP=t step against TP=1 still holds: the extra dispatches repeat the same kernels. */
  readonly oraclePass: boolean;
}

/**
 * Runs the classroom layer on the pool's t ranks with rank `slow.rank` dispatching each kernel
 * `slow.factor` times (#slow, src/ranks/slowed-backend.ts), schedules it with the kernels timed
 * here and the collectives as measured, and names each collective's straggler (the last rank to
 * enter it, src/schedule/stragglers.ts).
 */
export async function runClassroomStraggler(
  pool: RankPool<LayerWorkerPrograms>,
  slow: RankSlowdown,
  onProgress?: (line: string) => void,
): Promise<ClassroomStragglerRun> {
  const c = configFromPreset('classroom', { tp: pool.size });
  const run = await runLayer(pool, c, {
    slow,
    timingRanks: timingRanksFor(slow, c.tp),
    cpuCheck: false,
    onProgress,
  });
  const timeline = runTimeline(run, 'measured', true);
  return { slow, timeline, stragglers: stepStragglers(timeline), oraclePass: run.oracle.pass };
}

/** The same through a lender of warm workers (the page's runner). */
export function runClassroomStragglerOn(
  pools: PoolLender,
  t: number,
  slow: RankSlowdown,
  onProgress?: (line: string) => void,
): Promise<ClassroomStragglerRun> {
  return pools.withPool(t, (pool) => runClassroomStraggler(pool, slow, onProgress));
}
