import type { RankSlowdown } from '../core/rank-slowdown.ts';
import type { LayerConfig } from '../parallel/config.ts';
import type { Timeline } from '../schedule/schedule.ts';
import { stepStragglers, type PlanCallKey } from '../schedule/step-stragglers.ts';
import type { StragglerAnalysis } from '../schedule/stragglers.ts';
import type { PoolLender, LayerWorkerPrograms } from './layer-run.ts';
import { runLayer } from './layer-run.ts';
import { createLayerPool } from './pools.ts';
import type { RankPool } from '../ranks/pool.ts';
import { runTimeline, timingRanksFor } from './run-timeline.ts';

/** A classroom step's own run of the layer: its scheduled step (measured kernels and transport) and who waited for whom. */
export interface ClassroomLayerRun {
  readonly config: LayerConfig;
  readonly slow: RankSlowdown | null;
  readonly timeline: Timeline;
  readonly stragglers: StragglerAnalysis<PlanCallKey>;
  /** The TP=t step against TP=1 on the same adapter. */
  readonly oraclePass: boolean;
}

/**
 * Runs `c` on the pool's t ranks (with `slow`, rank `slow.rank` dispatches each kernel
 * `slow.factor` times: #slow, src/ranks/slowed-backend.ts), checks it against TP=1, schedules it
 * with the kernels timed here, the collectives as measured and Megatron's async dgrad overlap, and
 * names each collective's straggler (the last rank to enter it, src/schedule/stragglers.ts).
 */
export async function runClassroomLayer(
  pool: RankPool<LayerWorkerPrograms>,
  c: LayerConfig,
  slow: RankSlowdown | null,
  onProgress?: (line: string) => void,
): Promise<ClassroomLayerRun> {
  const run = await runLayer(pool, c, {
    slow,
    timingRanks: timingRanksFor(slow, c.tp),
    cpuCheck: false,
    onProgress,
  });
  const timeline = runTimeline(run, 'measured', true);
  return { config: c, slow, timeline, stragglers: stepStragglers(timeline), oraclePass: run.oracle.pass };
}

/** `runClassroomLayer` on warm workers from a lender (the page's runner), or on its own pool of t started and stopped here. */
export async function runClassroomLayerOn(
  pools: PoolLender | undefined,
  c: LayerConfig,
  slow: RankSlowdown | null,
  onProgress?: (line: string) => void,
): Promise<ClassroomLayerRun> {
  if (pools) return pools.withPool(c.tp, (pool) => runClassroomLayer(pool, c, slow, onProgress));
  onProgress?.(`starting ${c.tp} rank workers…`);
  const pool = await createLayerPool(c.tp);
  try {
    return await runClassroomLayer(pool, c, slow, onProgress);
  } finally {
    await pool.dispose();
  }
}
