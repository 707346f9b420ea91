// `npm run sweep -- --pipeline-grid`: the grid is the whole done-when grid, every point a model the
// ranks accept, bad sizes refused before a browser starts, and a failing point makes the table say so.
import { describe, expect, it } from 'vitest';
import { printPipelineGrid } from '../../../scripts/bench/sweep-pipeline-grid.ts';
import {
  pipelineGrid,
  pipelineGridDefaults,
  pipelineGridModel,
  type PipelineGridPoint,
} from '../../../src/parallel/pipeline-grid.ts';
import { assertPipelineModel } from '../../../src/parallel/pipeline-model.ts';
import type { PipelineGridRow } from '../../../src/session/pipeline-grid-run.ts';
import { runCli } from './run-cli.ts';

describe('npm run sweep -- --pipeline-grid', () => {
  it('covers every schedule × t {1, 2} × p {2, 4} × d {1, 2} × both syncs: 64 points on ≤ 16 ranks the ranks accept', () => {
    expect(pipelineGrid).toHaveLength(64);
    expect(new Set(pipelineGrid.map((p) => JSON.stringify(p))).size).toBe(64);
    for (const [key, values] of [
      ['schedule', ['afab', '1f1b', 'interleaved', 'zb-h1']],
      ['tp', [1, 2]],
      ['pp', [2, 4]],
      ['dp', [1, 2]],
      ['sync', ['all-reduce', 'distributed-optimizer']],
    ] as const satisfies readonly (readonly [keyof PipelineGridPoint, readonly unknown[]])[])
      expect(new Set<unknown>(pipelineGrid.map((p) => p[key])), key).toEqual(new Set<unknown>(values));
    for (const p of pipelineGrid) {
      const model = pipelineGridModel(p, pipelineGridDefaults);
      expect(() => assertPipelineModel(model), JSON.stringify(p)).not.toThrow();
      expect(model.v).toBe(p.schedule === 'interleaved' ? 2 : 1);
      expect(p.tp * p.pp * p.dp).toBeLessThanOrEqual(16);
    }
  });

  it('prints a failing point as FAIL with its tensors, and counts it out', () => {
    const row = (ok: boolean, ratio: number): PipelineGridRow => ({
      point: pipelineGrid[0]!,
      ranks: 2,
      ok,
      tensors: 104,
      worst: 'replica 0: block 1 dg2',
      worstAbs: ratio * 1e-5,
      worstTol: 1e-5,
      worstRatio: ratio,
      stepMs: 400,
      failures: ok ? [] : ['replica 0: block 1 dg2: 2.00e-5 > 1.00e-5'],
    });
    const lines: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = (s: string | Uint8Array) => (lines.push(String(s)), true);
    try {
      printPipelineGrid({
        adapter: 'test adapter',
        sizes: pipelineGridDefaults,
        rows: [row(true, 0.002), row(false, 2)],
        seconds: 3,
      });
    } finally {
      process.stdout.write = write;
    }
    const text = lines.join('');
    expect(text).toMatch(/FAIL 1 tensor: replica 0: block 1 dg2: 2\.00e-5 > 1\.00e-5$/m);
    expect(text).toMatch(/1 of 2 points equal one device in 3 s; worst 2\.0 of the tolerance/);
  });

  it('refuses an m the interleaved rule forbids and a bad number before a browser starts, exit 2', async () => {
    const m6 = await runCli('scripts/bench/sweep.ts', '--pipeline-grid', '--micro-batches', '6');
    expect(m6.code).toBe(2);
    expect(m6.stderr).toMatch(/interleaved at t 1 × p 4: the interleaved schedule needs m to be a multiple of p = 4/);
    const bad = await runCli('scripts/bench/sweep.ts', '--pipeline-grid', '--layers', 'x');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--layers is "x"; write a whole number ≥ 1/);
    expect(bad.stdout).toBe('');
  }, 60_000);
});
