// Every compute op of a chunked step timed on the real rank workers with the ring moving and with
// nothing moving, and the step scheduled with the kernels under a transfer slowed.
import { afterAll, expect, test } from 'vitest';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { runLayer, type LayerWorkerPrograms } from '../../../src/session/layer-run.ts';
import { createLayerPool } from '../../../src/session/pools.ts';
import type { RankPool } from '../../../src/ranks/pool.ts';
import { runTimeline } from '../../../src/session/run-timeline.ts';
import type { TransferTimeline } from '../../../src/schedule/transfer-slowdown.ts';

let pool: RankPool<LayerWorkerPrograms> | undefined;
afterAll(async () => {
  await pool?.dispose();
});

test('under chunks:2 with SP at t = 2 the run carries both times for every compute op of every rank', {
  timeout: 240_000,
}, async () => {
  const c = { ...configFromPreset('classroom'), s: 16, tp: 2, sp: true, tpOverlapChunks: 2 };
  pool = await createLayerPool(2);
  const run = await runLayer(pool, c, { timing: false, cpuCheck: false, transferPairs: 2 });
  expect(run.oracle.pass).toBe(true);
  const tt = run.transferTimes!;
  expect(tt.pairs).toBe(2);
  const compute = run.plan.ops.filter((o) => o.kind !== 'collective');
  for (const m of [tt.aloneMs, tt.overlappedMs]) {
    expect(m).toHaveLength(2);
    for (const row of m) {
      expect(row).toHaveLength(run.plan.ops.length);
      // Every kernel took time (a timestamp pair per pass; SwiftShader's clock is in ns).
      for (const op of compute) expect(row[op.index], op.name).toBeGreaterThan(0);
    }
  }
  expect(tt.stepWallMs.aloneMs).toBeGreaterThan(0);
  expect(tt.stepWallMs.overlappedMs).toBeGreaterThan(0);
  // Scheduled with the ring measured here, the chunked GEMMs run under the chunks' transfers, and
  // exactly those events carry both times.
  const tl = runTimeline(run, 'measured', true) as TransferTimeline;
  const slowed = tl.events.filter((e) => e.transfer);
  expect(slowed.length).toBeGreaterThan(0);
  expect(slowed.every((e) => e.stream === 'compute')).toBe(true);
  // The schedule takes each op's median over the ranks (at t = 2 the mean of both ranks' times).
  const mid = (m: readonly (readonly number[])[], i: number): number => (m[0]![i]! + m[1]![i]!) / 2;
  for (const e of slowed) {
    expect(e.transfer!.aloneMs).toBeCloseTo(mid(tt.aloneMs, e.opIndex), 12);
    expect(e.transfer!.overlappedMs).toBeCloseTo(mid(tt.overlappedMs, e.opIndex), 12);
  }
});
