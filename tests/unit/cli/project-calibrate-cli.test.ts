// `npm run project -- --calibrate DIR` and `--system file:PATH` as a user runs them (child processes),
// on nccl-tests outputs from public threads and a GEMM sweep in the bundle's format.
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseProjectArgs } from '../../../scripts/project/project-args.ts';
import { sweepShapes } from '../../../src/calibrate/gemm-shapes.ts';
import { gemmSweepColumns } from '../../../src/calibrate/gemm-sweep.ts';
import { parseSystemFile } from '../../../src/calibrate/system-file.ts';
import { formatMs } from '../../../src/core/format.ts';
import { gemmTime } from '../../../src/hardware/kernel-time.ts';
import { runCli } from './run-cli.ts';

const run = (...args: string[]) => runCli('scripts/project/project.ts', ...args);
const flags = ['--system', 'dgx-h100', '--dtype', 'bf16', '--tp', '2'];
const fixtures = ['nccl-1435-all-gather-2gpu.txt', 'nccl-tests-232-all-reduce-2node.txt'];

/**
 * A calibration directory: two nccl-tests outputs, and a gemm-sweep.csv with every shape the
 * projection prices at t = 2 timed at 1.3× the model (a stand-in for the GPU's measurement: this
 * machine has none; what is checked is that each timed shape reaches the projection).
 */
async function calibrationDir(): Promise<{ dir: string; shapes: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'calibrate-'));
  for (const f of fixtures) copyFileSync(`tests/fixtures/nccl-tests/${f}`, join(dir, f));
  const args = parseProjectArgs(flags);
  const shapes = await sweepShapes({ ...args.setup, tp: 2 }, { system: args.system, dtype: args.dtype });
  const rows = shapes.map((s) => {
    const us = 1.3 * gemmTime(s, args.system.gpu, s.precision).us;
    return [s.label, s.M, s.N, s.K, s.batch, s.precision, us.toFixed(3), '0', 'NVIDIA H100 80GB HBM3'].join(',');
  });
  writeFileSync(join(dir, 'gemm-sweep.csv'), `${[gemmSweepColumns.join(','), ...rows].join('\n')}\n`);
  return { dir, shapes: shapes.length };
}

describe('npm run project -- --calibrate DIR', () => {
  it('fits, writes the system file, and prints before and after; --system file: projects the same step', async () => {
    const { dir, shapes } = await calibrationDir();
    expect(shapes).toBeGreaterThan(5);
    const r = await run(...flags, '--calibrate', dir);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^nccl-1435-all-gather-2gpu.txt\s+in node\s+allGather\s+2\s/m);
    expect(r.stdout).toMatch(/^nccl-tests-232-all-reduce-2node.txt\s+in node\s+allReduce\s+2\s/m);
    expect(r.stdout).toContain(
      `GEMMs: ${shapes} shapes timed; ${shapes} of the ${shapes} the projection prices at t = 2`,
    );
    expect(r.stdout).toMatch(/t = 2: TP all-reduce priced with the 2-rank fit of nccl-tests-232-all-reduce-2node.txt/);
    const file = join(dir, 'calibrated-system.json');
    const system = parseSystemFile(readFileSync(file, 'utf8'));
    expect(system.name).toBe('dgx-h100+calibrated');
    expect(system.intra.fitted?.map((f) => f.op)).toEqual(['allGather', 'allReduce']);
    expect(system.measuredGemms).toHaveLength(shapes);
    const row = /^2\s+(\S+ \S+)\s+(\S+ \S+)\s+([+-][\d.]+%)/m.exec(r.stdout);
    expect(row).not.toBeNull();
    // Slower GEMMs (1.3×) and a 47 GB/s all-reduce in place of 370: the step grows.
    expect(row![3]!.startsWith('+')).toBe(true);
    const before = JSON.parse((await run(...flags, '--json')).stdout) as { rows: { stepMs: number }[] };
    const after = JSON.parse((await run(...flags, '--system', `file:${file}`, '--json')).stdout) as {
      system: string;
      rows: { stepMs: number }[];
    };
    expect(after.system).toBe('DGX H100: 8×H100 SXM, NVLink 4, calibrated');
    expect(formatMs(before.rows[0]!.stepMs)).toBe(row![1]);
    expect(formatMs(after.rows[0]!.stepMs)).toBe(row![2]);
  }, 120_000);

  it('exits 2 naming what is wrong: an empty directory, a table without its collective, a system file that is not there', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'calibrate-'));
    const a = await run('--calibrate', empty);
    expect(a.code).toBe(2);
    expect(a.stderr).toMatch(
      /--calibrate .*: no nccl-tests output \(\*.txt, \*.log, \*.out\) and no gemm-sweep.csv in it/,
    );
    copyFileSync('tests/fixtures/nccl-tests/nccl-340-old-format.txt', join(empty, 'run.txt'));
    const b = await run('--calibrate', empty);
    expect(b.code).toBe(2);
    expect(b.stderr).toMatch(/run.txt: line 1: which collective is this table\?/);
    const c = await run('--system', 'file:/nonexistent/system.json');
    expect(c.code).toBe(2);
    expect(c.stderr).toMatch(/--system file:\/nonexistent\/system.json: cannot read it \(ENOENT\)/);
  }, 120_000);
});
