// `npm run sweep -- --pp 2 --dp 2 …` end to end: the CLI as a user runs it, four rank workers in headless
// Chromium, its JSON read back.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import type { PipelineSweepReport } from '../../src/session/pipeline-sweep.ts';

it('runs a pipeline with two replicas and the distributed optimizer, the oracle passing', {
  timeout: 600_000,
}, async () => {
  const { stdout } = await promisify(execFile)(
    'npx',
    [
      'tsx',
      'scripts/bench/sweep.ts',
      '--tp',
      '1',
      '--pp',
      '2',
      '--dp',
      '2',
      '--micro-batches',
      '2',
      '--schedule',
      '1f1b',
      '--distributed-optimizer',
      '--json',
    ],
    { maxBuffer: 16 * 2 ** 20 },
  );
  const r = JSON.parse(stdout) as PipelineSweepReport;
  expect(r.mesh).toMatchObject({ tp: 1, pp: 2, dp: 2, microBatches: 2, ranks: 4, sync: 'distributed-optimizer' });
  expect(r.oracle.pass).toBe(true);
  expect(r.ranks.map((x) => [x.stage, x.replica])).toEqual([
    [0, 0],
    [0, 1],
    [1, 0],
    [1, 1],
  ]);
  // Per replica 2·m·(p − 1) = 4 boundary messages: 8 in all.
  expect(r.p2p.messages).toBe(8);
  expect(r.stages).toHaveLength(2);
  for (const s of r.stages) expect(s.peakBytes).toBeGreaterThan(0);
  expect(r.projected.formulaShare).toBeCloseTo(1 / 3, 12);
});
