// `npm run trace` as a user runs it: a child process on the hand-written fixtures.
import { runCli } from '../cli/run-cli.ts';
import { describe, expect, test } from 'vitest';
import { fixture } from './kineto-fixtures.ts';

const run = (...args: string[]) => runCli('scripts/trace/trace.ts', ...args);

describe('npm run trace', () => {
  test('--json prints the per-rank analysis with the hand-computed exposed times', async () => {
    const r = await run(fixture('tp2-rank0.json'), fixture('tp2-rank1.json.gz'), '--json');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { analysis: { ranks: { rank: number; exposedMs: number }[] } };
    expect(out.analysis.ranks.map((x) => x.rank)).toEqual([0, 1]);
    expect(out.analysis.ranks[0]!.exposedMs).toBeCloseTo(0.35, 9);
    expect(out.analysis.ranks[1]!.exposedMs).toBeCloseTo(0.5, 9);
  }, 60_000);

  test('the table names each rank with its exposed time', async () => {
    const r = await run(fixture('tp2-rank0.json'), fixture('tp2-rank1.json'));
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^0\s+tp2-rank0\.json\s+1\.5 ms\s+1\.05 ms\s+550 µs\s+350 µs\s+36\.4%/m);
    expect(r.stdout).toMatch(/^1\s+tp2-rank1\.json\s+1\.55 ms\s+900 µs\s+600 µs\s+500 µs\s+16\.7%/m);
  }, 60_000);

  test('bad input exits 2 with the reason', async () => {
    const r = await run(fixture('foreign.json'));
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^trace: foreign\.json: no "traceEvents" array/);
    expect((await run()).stderr).toMatch(/no trace files given/);
  }, 60_000);
});
