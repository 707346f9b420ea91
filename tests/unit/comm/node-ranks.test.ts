import { mkdtempSync, readFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test, vi } from 'vitest';
import { collectiveCases, collectiveTolerance } from '../../collective-cases.ts';
import { runCli } from '../cli/run-cli.ts';
import type { NodeRanksCheck } from './node-ranks-check.ts';
import type { CommBenchReport } from '../../../scripts/bench/bench-comm-page.ts';

// Each test starts Node, Dawn and t worker threads (each loading the sources and a device):
// seconds, more on a busy machine.
vi.setConfig({ testTimeout: 120_000 });

test('rank worker threads in Node, each with its own Dawn GPUDevice, pass every collective case on host and GPU data at t = 1, 3 and 4, and a thread that dies fails its pool at once, saying why', async () => {
  const degrees = [1, 3, 4];
  const r = await runCli('tests/unit/comm/node-ranks-check.ts', ...degrees.map(String));
  expect(r.code, r.stderr).toBe(0);
  const run = JSON.parse(r.stdout) as NodeRanksCheck;
  const expected = degrees.reduce((n, t) => n + 2 * t * collectiveCases(t).length, 0);
  expect(run.results).toHaveLength(expected);
  for (const x of run.results) {
    const what = `t = ${x.t} ${x.device} ${x.op} [${x.shape}] rank ${x.rank}`;
    expect(x.got, what).toEqual(x.want);
    expect(x.diff, what).toBeLessThanOrEqual(collectiveTolerance(x.t));
  }
  expect(run.pools.map((p) => p.t)).toEqual(degrees);
  for (const p of run.pools) {
    expect(p.adapters).toHaveLength(p.t);
    // Every call traced on every rank; GPU calls read back and upload around the ring's phases.
    expect(p.phases).toHaveLength(2 * p.t * collectiveCases(p.t).length);
    for (const e of p.phases) {
      if (e.device === 'cpu') expect(e.names).toEqual(['sync', 'stage', 'transport', 'gather']);
      else {
        expect(e.device).toBe('gpu');
        expect([e.names[0], e.names.at(-1)], e.names.join(', ')).toEqual(['readback', 'upload']);
        expect(
          e.names.filter((n) => n === 'sync'),
          e.names.join(', '),
        ).toEqual(['sync']);
      }
    }
    expect(p.deviceLost).toEqual(Array(p.t).fill('destroyed'));
  }
  // A worker thread that dies is reported at once, naming the rank and why, instead of a hang.
  expect(run.faults).toEqual([
    {
      worker: 'node-throw.worker.ts',
      error: expect.stringContaining('rank 0: worker error: this rank module fails on purpose as it loads'),
    },
    {
      worker: 'node-exit.worker.ts',
      error: expect.stringContaining(
        'rank 0: worker error: its worker thread exited (code 3) before the pool ended it',
      ),
    },
  ]);
  for (const f of run.faults) expect(f.error).toMatch(/^init failed on ranks 0, 1:/);
});

test('bench:comm --node measures each phase of a t = 2 all-reduce on host and GPU data in Node through Dawn', async () => {
  const saved = join(mkdtempSync(join(tmpdir(), 'bench-comm-')), 'report.json');
  const r = await runCli(
    'scripts/bench/bench-comm.ts',
    ...['--node', '--json', '--save', saved, '--t', '2', '--sizes', '64K', '--ops', 'allReduce', '--iters', '2'],
  );
  expect(r.code, r.stderr).toBe(0);
  const report = JSON.parse(r.stdout) as CommBenchReport & { host: string };
  expect(JSON.parse(readFileSync(saved, 'utf8'))).toEqual(report);
  expect(report.hardwareConcurrency).toBe(availableParallelism());
  expect(report.host).toMatch(/^rank worker threads in Node v\d+\.\d+\.\d+ through Dawn/);
  expect(report.mapRoundTrips.map((m) => m.t)).toEqual([2]);
  expect(report.rows.map((x) => `${x.device} ${x.result} ${x.upload ?? '-'}`)).toEqual([
    'cpu new -',
    'cpu out -',
    'gpu new mapped',
    'gpu out mapped',
  ]);
  for (const row of report.rows) {
    expect(row.totalMs).toBeGreaterThan(0);
    // The whole call holds its phases: each is > 0 where it runs, and none is longer than the call.
    for (const phase of [row.syncMs, row.transportMs, row.gatherMs]) {
      expect(phase).toBeGreaterThan(0);
      expect(phase).toBeLessThanOrEqual(row.totalMs);
    }
    if (row.device === 'gpu') expect([row.readbackMs, row.uploadMs].every((ms) => ms > 0)).toBe(true);
    else expect([row.readbackMs, row.uploadMs]).toEqual([0, 0]);
    expect(row.timeline).toHaveLength(2);
  }
});

test('bench:comm --node refuses what Dawn for Node cannot run, saying why', async () => {
  const r = await runCli('scripts/bench/bench-comm.ts', '--node', '--upload', 'write-buffer');
  expect(r.code).not.toBe(0);
  expect(r.stderr).toContain(
    `bench:comm: --upload takes mapped under --node (Dawn for Node crashes on a writeBuffer from shared memory, the ring's slots); got "write-buffer".`,
  );
  const p = await runCli('scripts/bench/bench-comm.ts', '--node', '--transport', 'message-port');
  expect(p.code).not.toBe(0);
  expect(p.stderr).toContain('bench:comm: --transport takes sab-ring under --node');
});
