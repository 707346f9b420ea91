import { afterAll, describe, expect, test } from 'vitest';
import { moeWorld } from '../../../src/parallel/moe-layout.ts';
import type { RankPool } from '../../../src/ranks/pool.ts';
import type { LayerWorkerPrograms } from '../../../src/session/layer-run.ts';
import { moeConfig } from '../../../src/reference/moe/config.ts';
import { moePoolMesh, moeRankTolerance, runMoe, runMoeSweep, type MoeRunArgs } from '../../../src/session/moe-run.ts';
import { createLayerPool } from '../../../src/session/pools.ts';
import { caseLayout, type MoeEpCase } from '../../moe-ep-cases.ts';
import { keptPools, poolTransports } from './helpers.ts';

// The MoE block on rank workers through the runner (src/session/moe-run.ts; GPU backend: router
// GEMM, permute, the grouped GEMMs, combine and their backward in WGSL; the collectives over the
// pool's transport) equals the single-device block (src/parallel/moe-oracle.ts): dropless of all the
// ranks' tokens, with capacity of each rank's (Megatron drops per routing call), aux 0.01 and z
// 0.001 over every rank's distinct tokens. The subset covers every value of the grid the Node test
// runs whole (tests/unit/parallel/moe-ep.test.ts): EP {1, 2, 4}, ETP {1, 2}, TP {1, 2} with SP,
// E {4, 8}, k {1, 2}, capacity or not, both dispatchers, a shared expert once. Tolerance moeRankTolerance (1e-4: float32
// through three GEMM-like stages over O(1) values, as tests/gpu/kernels/moe/moe-block.test.ts); the
// routing margin is held above the float32 router's logit error bound (moeLogitError), so equal
// picks follow from the bound.
const h = 16;

const args = (cs: MoeEpCase, T = 8): MoeRunArgs => ({
  config: moeConfig(
    { numMoeExperts: cs.E, moeRouterTopk: cs.k, moeFfnHiddenSize: 6 },
    {
      moeRouterPreSoftmax: cs.k === 1,
      moeExpertCapacityFactor: cs.capacity ?? null,
      moeAuxLossCoeff: 0.01,
      moeZLossCoeff: 0.001,
      routerSkew: cs.skew ?? 0,
      moeSharedExpertIntermediateSize: cs.shared ?? null,
    },
  ),
  h,
  tokens: T,
  seed: 41,
  layout: caseLayout(cs),
  demonstration: cs.sp === false,
});

// One pool per transport and rank mesh, kept for the file: most runs below share a mesh with another
// (EP 4 alone six times, EP 2 alone or with TP 2 several), so each pool's start and each device's
// first pipelines are paid once, as the page and the sweep's repeated runs reuse pools (every run
// clears the trace first).
const pools = keptPools<RankPool<LayerWorkerPrograms>>();
afterAll(() => pools.dispose());

async function run(cs: MoeEpCase, transport: 'sab-ring' | 'message-port' = 'sab-ring', T = 8) {
  const a = args(cs, T);
  const mesh = moePoolMesh(a.layout);
  const pool = pools.pool(`${transport} ${JSON.stringify(mesh)}`, () =>
    createLayerPool(moeWorld(a.layout), transport, 10_000, mesh),
  );
  return runMoe(await pool, a);
}

/** EP alone, alltoall: counts, dispatch, combine, aux counts, losses, the two backward all-to-alls, dWr. */
const epOnly = ['allGather', 'allToAll', 'allToAll', 'allReduce', 'allReduce', 'allToAll', 'allToAll', 'allReduce'];

describe.each(poolTransports)('EP alone on rank workers over %s', (transport) => {
  test.each<MoeEpCase>([
    { ep: 2, E: 4, k: 1 },
    { ep: 4, E: 8, k: 2, capacity: 1 },
  ])(
    'at %o equals one device; the trace has the all-to-alls with bytes per peer and the expert GEMMs with their rows',
    async (cs) => {
      const r = await run(cs, transport);
      expect(r.oracle.failures).toEqual([]);
      expect(r.oracle.tolerance).toBe(moeRankTolerance);
      if (cs.capacity !== undefined) expect(r.dropped, 'the capacity drops picks').toBeGreaterThan(0);
      const L = cs.E / cs.ep;
      for (let q = 0; q < cs.ep; q++) {
        const mine = r.trace.filter((e) => e.rank === q);
        expect(mine.filter((e) => e.stream === 'comm').map((e) => e.op)).toEqual(epOnly);
        const gemms = mine.filter((e) => e.experts);
        expect(gemms.map((e) => e.op)).toEqual(['moe.experts', 'moe.experts.backward']);
        for (const g of gemms) expect(g.experts!.tokens).toEqual(r.ranks[q]!.expertRows);
        const dispatch = mine.find((e) => e.comm?.tensor === 'moe.dispatch')!;
        const rows = Array.from({ length: cs.ep }, (_, j) =>
          r.ranks[q]!.tokensPerExpert.slice(j * L, (j + 1) * L).reduce((n, v) => n + v, 0),
        );
        expect(dispatch.comm!.peers!.sentBytes).toEqual(rows.map((n) => n * h * 4));
        expect(r.ranks[q]!.dispatchBytes).toBe(rows.reduce((a, b) => a + b, 0) * h * 4);
      }
    },
  );
});

test.each<MoeEpCase>([
  { ep: 1, tp: 2, E: 4, k: 2, capacity: 1, dispatcher: 'allgather' },
  { ep: 2, etp: 2, tp: 2, E: 8, k: 1, dispatcher: 'alltoall' },
  { ep: 2, etp: 2, E: 4, k: 2, capacity: 1, dispatcher: 'allgather' },
  { ep: 4, E: 8, k: 1, capacity: 1, dispatcher: 'allgather' },
  { ep: 2, tp: 2, E: 8, k: 2, capacity: 1, dispatcher: 'alltoall' },
  { ep: 1, etp: 2, tp: 2, E: 8, k: 2, dispatcher: 'alltoall', shared: 4 },
])(
  'TP with SP, ETP, the allgather dispatcher and a shared expert on rank workers: %o equals one device',
  async (cs) => {
    const r = await run(cs);
    expect(r.oracle.failures).toEqual([]);
    expect(r.copies).toBe(1);
    expect(r.refusal).toBeNull();
  },
);

test('a rank whose experts receive no token (one token per rank, E 8 top-1 over EP 4) still takes part and gives zero gradients', async () => {
  const r = await run({ ep: 4, E: 8, k: 1 }, 'sab-ring', 1);
  expect(r.expertLoad.slice(6)).toEqual([0, 0]);
  expect(r.ranks[3]!.expertRows).toEqual([0, 0]);
  expect(r.oracle.failures).toEqual([]);
});

test('a skewed router (skew 3, E 8 top-2, capacity 1, EP 4) drops more tokens, loads rank 0 most, and still equals one device (the sweep’s entry, runMoeSweep)', async () => {
  const skewed = await runMoeSweep(args({ ep: 4, E: 8, k: 2, capacity: 1, skew: 3 }));
  const even = await run({ ep: 4, E: 8, k: 2, capacity: 1 });
  expect(skewed.oracle.failures).toEqual([]);
  expect(skewed.dropped).toBeGreaterThan(even.dropped);
  expect(skewed.straggler.rank).toBe(0);
  expect(skewed.ranks.map((r) => r.allToAll['moe.dispatch']!.length)).toEqual([4, 4, 4, 4]);
  expect(skewed.ranks.every((r) => r.stepMs > 0)).toBe(true);
});

test('M036 on rank workers: TP 2 without SP routes every token twice (duplicates named, dispatch bytes doubled) and carries Megatron’s refusal', async () => {
  const noSp = await run({ ep: 2, tp: 2, sp: false, E: 4, k: 2 }, 'sab-ring', 8);
  const sp = await run({ ep: 2, tp: 2, E: 4, k: 2 }, 'sab-ring', 4);
  expect(noSp.oracle.failures).toEqual([]);
  expect(noSp.copies).toBe(2);
  expect(noSp.ranks.map((r) => r.duplicateOf)).toEqual([null, 0]);
  expect(noSp.refusal?.error).toBe('ValueError');
  expect(noSp.refusal?.source).toMatch(/moe_layer\.py:629/);
  // the same 8 logical tokens: with SP 4 per rank, without 8 on each
  const bytes = (r: typeof sp) => r.ranks.reduce((n, x) => n + x.dispatchBytes, 0);
  expect(bytes(noSp)).toBe(2 * bytes(sp));
});
