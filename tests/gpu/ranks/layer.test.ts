import { afterAll, describe, expect, test } from 'vitest';
import { configFromPreset, type LayerConfig } from '../../../src/parallel/config.ts';
import type { OracleReport } from '../../../src/parallel/oracle.ts';
import { spChunking } from '../../../src/parallel/tp-overlap.ts';
import { layerRunCache, runLayer, type LayerWorkerPrograms } from '../../../src/session/layer-run.ts';
import { createLayerPool } from '../../../src/session/pools.ts';
import type { RankPool } from '../../../src/ranks/pool.ts';
import { rankMemory } from '../../../src/accounting/accounting.ts';
import { accountingChecks, rankLiveMemory } from '../../../src/accounting/live-memory.ts';

const failures = (r: OracleReport) =>
  r.entries
    .filter((e) => !e.pass)
    .map((e) => `${e.tensor}: ${e.maxAbs.toExponential(2)} > ${e.tol.toExponential(2)}`)
    .join('; ');

// One pool per degree, reused across the cases of that degree.
const pools = new Map<number, RankPool<LayerWorkerPrograms>>();
async function poolOf(t: number): Promise<RankPool<LayerWorkerPrograms>> {
  let p = pools.get(t);
  if (!p) pools.set(t, (p = await createLayerPool(t)));
  return p;
}
afterAll(async () => {
  for (const p of pools.values()) await p.dispose();
});

// One run cache for the file, as the page keeps one: GEMM shape classes tuned once (the t = 1 reference's
// classes recur at every degree) and the TP = 1 reference of a preset computed once for all its degrees.
const cache = layerRunCache();

async function check(c: LayerConfig, runCache = cache) {
  const run = await runLayer(await poolOf(c.tp), c, { timing: false, cache: runCache });
  expect(run.oracle.pass, failures(run.oracle)).toBe(true);
  if (run.cpuOracle) expect(run.cpuOracle.pass, `CPU twins: ${failures(run.cpuOracle)}`).toBe(true);
  // Every buffer each rank made, by class, equals the accounting's memory (staging aside: it is the
  // device's pool of read-back and upload buffers, outside the accounting and kept across steps).
  expect(run.memory.map((m) => m.rank)).toEqual([...Array(c.tp).keys()]);
  run.memory.forEach((m, r) => {
    expect(m.ops, 'one position per plan op').toBe(run.plan.ops.length);
    const live = rankLiveMemory(m);
    for (const x of accountingChecks(live, rankMemory(run.plan, r)))
      expect(x.recordedBytes, `rank ${r} ${x.class}`).toBe(x.predictedBytes);
    if (c.tp > 1) expect(live.madeBytes.staging, 'the collectives staged through the pool').toBeGreaterThan(0);
  });
  // Staging is what each rank's step took from its device's pool, not what earlier work left idle
  // there (rank 0 also ran the TP = 1 reference): ranks moving the same pieces stage the same bytes.
  const staged = run.memory.map((m) => m.staging.map((s) => s.bytes));
  staged.forEach((s, r) => expect(s, `rank ${r}'s staging levels against rank 0's`).toEqual(staged[0]));
  return run;
}

// A larger shape than the classroom: GQA (8 heads, 2 groups), FFN not a multiple of 64, vocab 96.
const larger = { s: 16, b: 1, h: 64, heads: 8, groups: 2, ffn: 176, vocab: 96 };

describe('the layer across real rank workers on WebGPU matches TP=1', () => {
  for (const tp of [1, 2, 4]) {
    for (const sp of [false, true]) {
      test(`classroom at t=${tp}${sp ? ' with SP' : ''}: forward and backward`, async () => {
        const run = await check(configFromPreset('classroom', { tp, sp }));
        expect(run.cpuOracle, 'the classroom preset is small enough for the CPU twins').toBeDefined();
        const comm = run.commEvents.length;
        expect(comm > 0).toBe(tp > 1);
      });
    }
  }
  // t = 8 too: 8 heads split one per rank, the 2 KV groups < t all-gathered (as llama-gqa at t = 4 below).
  for (const tp of [1, 2, 4, 8]) {
    for (const sp of [false, true]) {
      test(`a larger GQA shape at t=${tp}${sp ? ' with SP' : ''}`, async () => {
        const run = await check({ ...configFromPreset('classroom'), ...larger, tp, sp });
        const names = run.commEvents.filter((e) => e.rank === 0).map((e) => e.name);
        expect(names.includes('qkv.gather'), 'QKV all-gathered exactly when the 2 KV groups < t').toBe(tp > 2);
        expect(names.includes('qkv.gather.backward')).toBe(tp > 2);
      });
    }
  }

  // The second step on a pool writes every named collective's result into the tensor the first
  // step's returned (ResultTensors): it must match TP=1 as the first did, with and without SP.
  test('a second step on the same pool, its collectives writing into the first step’s result tensors, still matches TP=1', async () => {
    for (const sp of [false, true])
      for (let step = 0; step < 2; step++) await check({ ...configFromPreset('classroom'), ...larger, tp: 2, sp });
  });

  // A run cache of its own: the TP = 1 reference runs on this pool's rank 0 first, and leaves its
  // full-size read-back buffers (64 KiB classes; the shards' are 32 KiB) idle in rank 0's pool.
  test('rank 0 stages no more than rank 1 after running the TP = 1 reference on its device', async () => {
    await check({ ...configFromPreset('classroom'), ...larger, tp: 2, sp: true }, layerRunCache());
  });

  // The llama-gqa preset at its full size (s 64, h 256, vocab 512): 2 KV groups < t, so linear_qkv's
  // slices are all-gathered along the last dim, the gradient reduce-scattered back. t = 4 only: the
  // larger GQA shape above runs the same scheme at t = 8 (and the CPU layer test every t of the
  // preset); llama-gqa at t = 8 cost ≈ 105 s here, mostly rank 0 tuning 21 shape classes at full
  // size and the first step compiling every pipeline on 8 devices. The first case pays for the
  // tuning (74 s once beside CI's other files): hence 300 s (a hang still fails).
  for (const [tp, sp] of [
    [4, false],
    [4, true],
  ] as const) {
    test(`llama-gqa at t=${tp}${sp ? ' with SP' : ''} (QKV all-gathered: 2 groups < ${tp} ranks)`, {
      timeout: 300_000,
    }, async () => {
      const run = await check(configFromPreset('llama-gqa', { tp, sp }));
      const names = run.commEvents.filter((e) => e.rank === 0).map((e) => e.name);
      expect(names).toContain('qkv.gather');
      expect(names).toContain('qkv.gather.backward');
    });
  }

  // Chunked TP overlap (tp-overlap.ts) on the real transports, with and without SP, in one test
  // per degree (one pool each): the c ∈ {2, 4} at t = 2 and 4. Under SP that covers each way a
  // chunk is cut (spChunking): t/c whole shards (t = 4, c = 2), one shard (c = t: t = 2, c = 2; t = 4,
  // c = 4), and pieces of a shard in two rounds (t = 2, c = 4); without SP c divides s. t = 8 cuts no
  // other way (t/c whole shards again): the in-process twin runs it, c ∈ {2, 4, 8, 16}, point by point
  // (tests/unit/parallel/tp-overlap-oracle.test.ts). 8 heads and s = 32 as there; no vocabulary
  // (the chunks cut only the MLP pair). Tolerance: oracleTolerance's, which bounds any summation
  // order of a reduction of length K — chunking reorders the wgrad's sum over s·b rows (per shard or
  // piece dispatch; with c < t the same per-shard order as c = t) and, without SP, the ring blocks
  // of down's all-reduce; forward and dgrad GEMM chunks keep each sum's order, and the exchanges of
  // running partials sum each piece in the ring order of the shared-memory ring's reduce-scatter.
  const chunkedSizes = { s: 32, b: 1, h: 32, heads: 8, groups: 2, ffn: 64, vocab: 0 };
  for (const tp of [2, 4]) {
    test(`chunked TP overlap at t=${tp}, c ∈ {2, 4}, with and without SP`, { timeout: 300_000 }, async () => {
      for (const sp of [false, true])
        for (const tpOverlapChunks of [2, 4]) {
          const c = { ...configFromPreset('classroom'), ...chunkedSizes, tp, sp, tpOverlapChunks };
          const run = await runLayer(await poolOf(tp), c, { timing: false, cpuCheck: false });
          expect(run.oracle.pass, `c=${tpOverlapChunks}${sp ? ' SP' : ''}: ${failures(run.oracle)}`).toBe(true);
          // down's output: without SP one all-reduce per chunk; under SP t − 1 ring exchanges of
          // running partials per round, at ring positions n with n mod t < t − 1, each named by the
          // GEMM dispatch whose partial it sends (chunk n of c, or with c < t part n mod g of chunk ⌊n/g⌋).
          const k = tpOverlapChunks;
          const ring = (g: number, pieces: number): string[] =>
            Array.from({ length: pieces }, (_, n) => n)
              .filter((n) => n % tp < tp - 1)
              .map((n) =>
                g === 1 ? `mlp.reduce[${n + 1}/${k}]` : `mlp.reduce[${Math.floor(n / g) + 1}/${k}]#${(n % g) + 1}`,
              );
          const want = sp
            ? ring(spChunking(tp, k).group, spChunking(tp, k).pieces)
            : Array.from({ length: k }, (_, j) => `mlp.reduce[${j + 1}/${k}]`);
          const chunks = run.commEvents.filter((e) => e.rank === 0 && /^mlp\.reduce\[/.test(e.name));
          expect(chunks.map((e) => e.name)).toEqual(want);
        }
    });
  }

  test('the SP norm-gradient skip switch is caught by the oracle on exactly the norm weights', async () => {
    const c = configFromPreset('classroom', { tp: 2, sp: true, skipSpNormGradAllReduce: true });
    const run = await runLayer(await poolOf(2), c, { timing: false, cpuCheck: false });
    expect(run.oracle.entries.filter((e) => !e.pass).map((e) => e.tensor)).toEqual(['dg1', 'dg2']);
  });

  test("each rank's kernels are timed alone, one time per compute op of the plan", async () => {
    const c = configFromPreset('classroom', { tp: 2 });
    const run = await runLayer(await poolOf(2), c, { cpuCheck: false });
    const computeOps = run.plan.ops.filter((o) => o.kind !== 'collective').map((o) => o.name);
    expect(run.computeTimes).toHaveLength(2);
    for (const t of run.computeTimes) {
      expect(t.ops.map((o) => o.name)).toEqual(computeOps);
      expect(t.ops.every((o) => o.ms >= 0)).toBe(true);
    }
  });

  test('a second layer run on a pool that is still running one is refused at once, and the first completes', async () => {
    const c = configFromPreset('classroom', { tp: 2 });
    const pool = await poolOf(2);
    const first = runLayer(pool, c, { timing: false, cpuCheck: false });
    await expect(runLayer(pool, c, { timing: false, cpuCheck: false })).rejects.toThrow(
      /^runLayer: this pool is still running an earlier layer run/,
    );
    expect((await first).oracle.pass).toBe(true);
    expect((await runLayer(pool, c, { timing: false, cpuCheck: false })).oracle.pass).toBe(true); // free again
  });
});
