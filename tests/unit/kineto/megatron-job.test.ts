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
import {
  dpBuckets,
  expectedCollectives,
  groupRanks,
  megatronJobTraces,
  type TracedJob,
  us,
} from './megatron-job-traces.ts';

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
    // Rank 11 computes 1.25× as long in step 5. Every compute kernel before the DP buckets is followed
    // by a TP collective that re-aligns node 1, so at each TP collective rank 11 lags its peers by
    // 0.25 × the compute since the last one, and these lags add up to D = 0.25 × that compute:
    // L·(8 GEMMs + 3 attention + 2 elementwise) + the logits GEMM (megatron-job-traces.ts) = 3.155 ms.
    const { gemm, attention, elementwise } = us;
    const D = ((job.slow!.factor - 1) * (job.layers * (8 * gemm + 3 * attention + 2 * elementwise) + gemm)) / 1e3;
    expect(D).toBeCloseTo(3.155, 9);
    // Each of rank 11's seven TP peers waits D in all; rank 11 waits in none of them, as node 0's ranks.
    const tpMs = (r: number): number =>
      step5.ranks[r]!.collectives.filter((x) => x.dim === 'tp').reduce((n, x) => n + x.ms, 0);
    for (const peer of [8, 9, 10, 12, 13, 14, 15]) expect(tpMs(peer) - tpMs(0)).toBeCloseTo(D, 6);
    expect(tpMs(11)).toBeCloseTo(tpMs(0), 6);
    // Node 1 reaches the first DP bucket D late: rank 3 waits D there for rank 11 (its DP peer).
    // What rank 11 made the others wait: 7·D in TP + D in DP = 25.24 ms.
    expect(step5.stragglerCausedMs).toBeCloseTo(8 * D, 6);
  });

  test('measured vs the projection of the manifest’s job: TP and DP collectives compared apart', async () => {
    const a = analyseMeasured(await read());
    const { parsed, system } = manifestProjection(readJobManifest(manifestText));
    expect([parsed.setup.tp, parsed.setup.gpus, parsed.setup.sp]).toEqual([8, 16, true]);
    const p = await projectStep(parsed.setup, { system, dtype: parsed.dtype });
    const c = compareWithProjection(a, 4, p);
    // Measured (step 4, no straggler: every kernel lasts its transfer time): per rank 4L all-gathers
    // and 4L reduce-scatters in TP, the three cross-entropy all-reduces and the finalize all-reduce
    // in TP, the gradient buckets in DP.
    const L = job.layers;
    const measured = {
      'allGather tp': (4 * L * us.ag) / 1e3,
      'reduceScatter tp': (4 * L * us.rs) / 1e3,
      'allReduce tp': (4 * us.ceAllReduce) / 1e3,
      'allReduce dp': (dpBuckets * us.dpBucket) / 1e3,
    };
    // Projected: the layers' collectives over m micro-batches and L layers in TP, plus the finalize
    // all-reduce (the SP norms' gradients, in the TP group); the gradient sync alone in DP.
    const layerMs = (op: string): number => {
      const sum = (t: typeof p.full): number =>
        t.events.filter((e) => e.rank === 0 && e.collective?.op === op).reduce((n, e) => n + e.t1 - e.t0, 0);
      return p.microBatches * (sum(p.full) + (L - 1) * sum(p.block));
    };
    expect(p.finalizeMs).toBeGreaterThan(0);
    const projected = {
      'allGather tp': layerMs('allGather'),
      'reduceScatter tp': layerMs('reduceScatter'),
      'allReduce tp': layerMs('allReduce') + p.finalizeMs,
      'allReduce dp': p.dpAllReduceMs,
    };
    const rows = Object.fromEntries(c.collectives.map((x) => [`${x.collective} ${x.dim}`, x]));
    expect(Object.keys(rows).sort()).toEqual(Object.keys(measured).sort());
    for (const [k, ms] of Object.entries(measured)) expect(rows[k]!.measuredMs, k).toBeCloseTo(ms, 9);
    for (const [k, ms] of Object.entries(projected)) {
      expect(ms, k).toBeGreaterThan(0);
      expect(rows[k]!.projectedMs, k).toBeCloseTo(ms, 9);
    }
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
