// The way back from a job shaped like a real Megatron-Core run: 16 ranks on 2 nodes, t = 8 with SP,
// DP = 2, each trace with the process groups Megatron creates (megatron-job-traces.ts), read as the
// CLI reads a job bundle's trace directory.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, test } from 'vitest';
import { readTraceFile } from '../../../scripts/trace/trace-files.ts';
import { assembleJob } from '../../../src/kineto/kineto-job.ts';
import { analyseMeasured } from '../../../src/kineto/measured-analysis.ts';
import { groupDimOf } from '../../../src/kineto/process-group.ts';
import { jobBundle } from '../../../src/megatron/job-bundle.ts';
import { jobManifestFile, manifestProjection, readJobManifest } from '../../../src/megatron/job-manifest.ts';
import { projectStep } from '../../../src/projection/step/cluster-projection.ts';
import { compareWithProjection } from '../../../src/projection/studies/measured-vs-projected.ts';
import { runCli } from '../cli/run-cli.ts';
import { twoNodeJobSpec } from './kineto-fixtures.ts';
import { expectedCollectives, groupRanks, megatronJobTraces, type TracedJob } from './megatron-job-traces.ts';

const spec = twoNodeJobSpec;
const job: TracedJob = {
  tp: spec.setup.tp,
  dp: spec.setup.gpus / spec.setup.tp,
  layers: spec.setup.layers,
  steps: [4, 5],
  slow: { rank: 11, step: 5, factor: 1.25 },
};

const root = mkdtempSync(join(tmpdir(), 'megatron-job-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const traces = join(root, 'run', 'torch_profile');
mkdirSync(traces, { recursive: true });
const texts = megatronJobTraces(job);
// As launch.sh leaves them, gathered from both nodes: rank-<r>.json.gz, the manifest beside.
texts.forEach((t, r) => writeFileSync(join(traces, `rank-${r}.json.gz`), gzipSync(t)));
const manifestText = jobBundle(spec).find((f) => f.path === jobManifestFile)!.text;
writeFileSync(join(traces, jobManifestFile), manifestText);

const read = async () =>
  assembleJob(await Promise.all(texts.map((_, r) => readTraceFile(join(traces, `rank-${r}.json.gz`)))));

test('group descriptions: Megatron-Core’s, hierarchical ones, and names Megatron does not create', () => {
  expect(groupDimOf('TENSOR_MODEL_PARALLEL_GROUP')).toBe('tp');
  expect(groupDimOf('DATA_PARALLEL_GROUP_WITH_CP')).toBe('dp');
  expect(groupDimOf('HIERARCHICAL_DATA_PARALLEL_GROUP_WITH_CP_L1')).toBe('dp');
  expect(groupDimOf('HIERARCHICAL_DATA_PARALLEL_GROUP_WITH_CP_GLOO_L0')).toBe('dp');
  expect(groupDimOf('EMBEDDING_GROUP')).toBe('pp');
  expect(groupDimOf('MODEL_PARALLEL_GROUP')).toBe('other');
  expect(groupDimOf('default_pg')).toBeUndefined();
  expect(groupDimOf('toString')).toBeUndefined();
  expect(groupDimOf(undefined)).toBeUndefined();
});

describe('a 2-node t = 8, DP = 2 Megatron-Core job', () => {
  test('every rank is read with the groups Megatron gives it: TP inside a node, DP across the nodes', async () => {
    const m = await read();
    expect(m.ranks.map((r) => r.rank)).toEqual([...Array(16).keys()]);
    const r11 = m.ranks[11]!;
    const byDim = new Map(r11.groups.map((g) => [groupDimOf(g.desc), g]));
    expect(byDim.get('tp')?.ranks).toBe('8,9,10,11,12,13,14,15');
    expect(byDim.get('dp')?.ranks).toBe('3,11');
    // Every NCCL kernel names a group Megatron creates, and runs in that rank's group of it.
    for (const rank of m.ranks)
      for (const s of rank.slices.filter((x) => x.work === 'comm')) {
        const dim = groupDimOf(s.nccl?.groupDesc);
        expect(dim === 'tp' || dim === 'dp').toBe(true);
        expect(s.nccl?.groupRanks).toBe(`[${groupRanks(job, rank.rank, dim === 'tp' ? 'tp' : 'dp').join(', ')}]`);
      }
  });

  test('collectives are counted per kind and group dimension; the straggler is named, its TP peers wait', async () => {
    const a = analyseMeasured(await read());
    const want = expectedCollectives(job);
    for (const s of a.steps) {
      expect(s.ranks).toHaveLength(16);
      for (const w of s.ranks) {
        const count = (c: string, dim: string): number =>
          w.collectives.filter((x) => x.collective === c && x.dim === dim).reduce((n, x) => n + x.count, 0);
        expect([
          count('allGather', 'tp'),
          count('reduceScatter', 'tp'),
          count('allReduce', 'tp'),
          count('allReduce', 'dp'),
        ]).toEqual([want.tpAllGather, want.tpReduceScatter, want.tpAllReduce, want.dpAllReduce]);
      }
    }
    const step5 = a.steps.find((s) => s.step === 5)!;
    expect(step5.straggler).toBe(11);
    // Rank 11's TP peers (8–15) sit longer inside their TP collectives than node 0's ranks do.
    const tpMs = (r: number): number =>
      step5.ranks[r]!.collectives.filter((x) => x.dim === 'tp').reduce((n, x) => n + x.ms, 0);
    expect(tpMs(8)).toBeGreaterThan(tpMs(0));
    expect(tpMs(11)).toBeLessThan(tpMs(8));
  });

  test('measured vs the projection of the manifest’s job: TP and DP collectives compared apart', async () => {
    const a = analyseMeasured(await read());
    const { parsed, system } = manifestProjection(readJobManifest(manifestText));
    expect([parsed.setup.tp, parsed.setup.gpus, parsed.setup.sp]).toEqual([8, 16, true]);
    const p = await projectStep(parsed.setup, { system, dtype: parsed.dtype });
    const c = compareWithProjection(a, 4, p);
    const row = (collective: string, dim: string) =>
      c.collectives.find((x) => x.collective === collective && x.dim === dim);
    for (const [collective, dim] of [
      ['allGather', 'tp'],
      ['reduceScatter', 'tp'],
      ['allReduce', 'tp'],
      ['allReduce', 'dp'],
    ] as const) {
      const x = row(collective, dim);
      expect(x, `${collective} in ${dim}`).toBeDefined();
      expect(x!.measuredMs).toBeGreaterThan(0);
      expect(x!.projectedMs).toBeGreaterThan(0);
    }
    expect(c.collectives.every((x) => x.dim !== undefined)).toBe(true);
  });

  test('npm run trace on the gathered directory: 16 ranks, the job, TP and DP rows', async () => {
    const r = await runCli('scripts/trace/trace.ts', traces);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('job llama-gqa-2x8 (core_v0.19.0): projected on DGX H100');
    expect(r.stdout).toContain('2 × 8 GPUs');
    expect(r.stdout).toMatch(/^Σ allGather in the TP group per GPU\s/m);
    expect(r.stdout).toMatch(/^Σ allReduce in the DP group per GPU\s/m);
    expect(r.stdout).toMatch(/^Σ allReduce in the TP group per GPU\s/m);
  }, 60_000);
});
