// The way back: a job bundle's traces and manifest, read by `npm run trace` with no command pasted.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { parseSystem } from '../../../src/hardware/systems.ts';
import { analyseMeasured } from '../../../src/kineto/measured-analysis.ts';
import { jobBundle } from '../../../src/megatron/job-bundle.ts';
import { jobManifestFile, manifestProjection, readJobManifest } from '../../../src/megatron/job-manifest.ts';
import { projectStep } from '../../../src/projection/step/cluster-projection.ts';
import { compareWithProjection } from '../../../src/projection/studies/measured-vs-projected.ts';
import { formatMs } from '../../../src/core/format.ts';
import { whatIfFromTrace } from '../../../src/calibrate/trace-what-if.ts';
import { changedSetup, layoutLabel } from '../../../src/calibrate/what-if-layout.ts';
import { runCli } from '../cli/run-cli.ts';
import { fixture, loadJob, tp2JobSpec } from './kineto-fixtures.ts';

const spec = tp2JobSpec;

const root = mkdtempSync(join(tmpdir(), 'trace-job-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const bundle = join(root, 'bundle');
const traces = join(root, 'run', 'torch_profile');
mkdirSync(bundle, { recursive: true });
mkdirSync(traces, { recursive: true });
for (const f of jobBundle(spec)) writeFileSync(join(bundle, f.path), f.text);
// As launch.sh leaves them: rank-<r>.json(.gz) with the manifest beside.
copyFileSync(fixture('tp2-rank0.json'), join(traces, 'rank-0.json'));
copyFileSync(fixture('tp2-rank1.json.gz'), join(traces, 'rank-1.json.gz'));
copyFileSync(join(bundle, jobManifestFile), join(traces, jobManifestFile));

describe('npm run trace on a job bundle’s traces', () => {
  test('a trace directory with the manifest beside: measured vs the projection of the manifest’s job, no command pasted', async () => {
    const r = await runCli('scripts/trace/trace.ts', traces);
    expect(r.code, r.stderr).toBe(0);
    const manifest = readJobManifest(readFileSync(join(traces, jobManifestFile), 'utf8'));
    const { parsed, system } = manifestProjection(manifest);
    const projection = await projectStep(parsed.setup, { system, dtype: parsed.dtype });
    const c = compareWithProjection(analyseMeasured(await loadJob('tp2-rank0.json', 'tp2-rank1.json')), 1, projection);
    const step = c.rows.find((x) => x.what === 'step')!;
    // ProfilerStep#1 of the fixtures spans 950 µs (measured-analysis.test.ts).
    expect(step.measuredMs).toBeCloseTo(0.95, 9);
    expect(r.stdout).toContain(
      'job tp2-h100 (core_v0.19.0): projected on DGX H100: 8×H100 SXM, NVLink 4, bf16, the Llama layer (--swiglu)',
    );
    expect(r.stdout).toMatch(
      new RegExp(`^step\\s+${formatMs(step.measuredMs)}\\s+${formatMs(step.projectedMs).replace('.', '\\.')}\\s`, 'm'),
    );
    expect(system).toBe(parseSystem('dgx-h100'));
  }, 60_000);

  test('--job takes the bundle directory; a bad manifest exits 2 naming it', async () => {
    const r = await runCli(
      'scripts/trace/trace.ts',
      fixture('tp2-rank0.json'),
      fixture('tp2-rank1.json'),
      '--job',
      bundle,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('job tp2-h100');
    const bad = join(root, 'bad.json');
    writeFileSync(bad, '{"kind":"something-else"}');
    const b = await runCli('scripts/trace/trace.ts', fixture('tp2-rank0.json'), '--job', bad);
    expect(b.code).toBe(2);
    expect(b.stderr).toMatch(/bad\.json: kind is "something-else"/);
  }, 60_000);

  test('--what-if: the job re-projected on its own rates and each layout asked for; bad specs exit 2 naming them', async () => {
    const r = await runCli('scripts/trace/trace.ts', traces, '--what-if', 't=1,gpus=1', '--what-if', 'recompute=full');
    expect(r.code, r.stderr).toBe(0);
    const manifest = readJobManifest(readFileSync(join(traces, jobManifestFile), 'utf8'));
    const { parsed, system } = manifestProjection(manifest);
    const job = { label: 'job', setup: parsed.setup, dtype: parsed.dtype };
    const one = changedSetup(parsed.setup, { tp: 1, gpus: 1 });
    const w = await whatIfFromTrace(await loadJob('tp2-rank0.json', 'tp2-rank1.json'), job, system, [
      { label: 't1', setup: one, dtype: parsed.dtype },
    ]);
    expect(w.job.ok && w.rows[0]!.ok).toBe(true);
    if (!w.job.ok || !w.rows[0]!.ok) return;
    const cell = (ms: number): string => formatMs(ms).replace('.', '\\.');
    expect(r.stdout).toMatch(
      new RegExp(
        `^the job: ${layoutLabel(parsed.setup)}\\s+${cell(w.job.nominal.stepMs)}\\s+${cell(w.job.reprojected.stepMs)}\\s`,
        'm',
      ),
    );
    expect(r.stdout).toMatch(
      new RegExp(
        `^t=1,gpus=1: ${layoutLabel(one)}\\s+${cell(w.rows[0]!.nominal.stepMs)}\\s+${cell(w.rows[0]!.reprojected.stepMs)}\\s`,
        'm',
      ),
    );
    expect(r.stdout).toMatch(/^recompute=full: t2 p1 v1 cp1 d1 mb1 m1 recompute full\s/m);
    const bad = await runCli('scripts/trace/trace.ts', traces, '--what-if', 't=1');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--what-if t=1: the global batch must be a multiple of b · DP');
    const alone = await runCli('scripts/trace/trace.ts', fixture('tp2-rank0.json'), '--what-if', 't=1');
    expect(alone.code).toBe(2);
    expect(alone.stderr).toContain("--what-if needs the job's manifest");
  }, 60_000);
});
