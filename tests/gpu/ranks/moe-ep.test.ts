import { describe, expect, test } from 'vitest';
import { moeLayout, moeWorld } from '../../../src/parallel/moe-layout.ts';
import { moeConfig } from '../../../src/reference/moe/config.ts';
import { moePoolMesh, moeRankTolerance, runMoe, type MoeRunArgs } from '../../../src/session/moe-run.ts';
import { createLayerPool } from '../../../src/session/pools.ts';
import { poolTransports } from './helpers.ts';

// The MoE block with expert parallelism on rank workers through the runner (src/session/moe-run.ts;
// GPU backend: router GEMM, permute, the grouped GEMMs, combine and their backward in WGSL; the
// all-to-alls over the pool's transport) equals the single-device block (src/parallel/moe-oracle.ts):
// dropless of all the ranks' tokens, with capacity of each rank's (Megatron drops per routing call),
// aux 0.01 and z 0.001 over the group. Tolerance moeRankTolerance (1e-4: float32 through three
// GEMM-like stages over O(1) values, as tests/gpu/kernels/moe/moe-block.test.ts); the routing
// margin is held above the float32 router's logit error bound (moeLogitError), so equal picks
// follow from the bound.
const h = 16;

interface Case {
  readonly ep: number;
  readonly E: number;
  readonly k: number;
  readonly capacity?: number;
  readonly skew?: number;
  readonly T?: number;
}

const cases: Case[] = [
  { ep: 2, E: 4, k: 1 },
  { ep: 2, E: 8, k: 2 },
  { ep: 4, E: 8, k: 1 },
  { ep: 4, E: 4, k: 2 },
  { ep: 2, E: 4, k: 2, capacity: 1 },
  { ep: 4, E: 8, k: 1, capacity: 1 },
];

const args = ({ ep, E, k, capacity, skew = 0, T = 8 }: Case): MoeRunArgs => ({
  config: moeConfig(
    { numMoeExperts: E, moeRouterTopk: k, moeFfnHiddenSize: 6 },
    {
      moeRouterPreSoftmax: k === 1,
      moeExpertCapacityFactor: capacity ?? null,
      moeAuxLossCoeff: 0.01,
      moeZLossCoeff: 0.001,
      routerSkew: skew,
    },
  ),
  h,
  tokens: T,
  seed: 41,
  layout: moeLayout(ep),
});

/** Every rank's collectives in order: counts, dispatch, combine, aux counts, losses, the two backward all-to-alls, dWr. */
const commOrder = ['allGather', 'allToAll', 'allToAll', 'allReduce', 'allReduce', 'allToAll', 'allToAll', 'allReduce'];

describe.each(poolTransports)('the MoE block with expert parallelism on rank workers over %s', (transport) => {
  test.each(cases)('at %o equals the single-device block', async (cs) => {
    const a = args(cs);
    const pool = await createLayerPool(moeWorld(a.layout), transport, 10_000, moePoolMesh(a.layout));
    try {
      const run = await runMoe(pool, a);
      expect(run.oracle.failures).toEqual([]);
      expect(run.oracle.tolerance).toBe(moeRankTolerance);
      if (cs.capacity !== undefined) expect(run.dropped, 'the capacity drops picks').toBeGreaterThan(0);
      for (let r = 0; r < cs.ep; r++) {
        const mine = run.trace.filter((e) => e.rank === r);
        expect(mine.filter((e) => e.stream === 'comm').map((e) => e.op)).toEqual(commOrder);
        // the expert GEMMs: one forward and one backward event carrying the rows of each local expert
        const gemms = mine.filter((e) => e.experts);
        expect(gemms.map((e) => e.op)).toEqual(['moe.experts', 'moe.experts.backward']);
        for (const g of gemms) expect(g.experts!.tokens).toEqual(run.ranks[r]!.expertRows);
        // the dispatch's bytes per peer: rows this rank sent to each EP peer × h × 4 bytes
        const dispatch = mine.find((e) => e.comm?.tensor === 'moe.dispatch')!;
        const L = cs.E / cs.ep;
        const sent = Array.from({ length: cs.ep }, (_, j) =>
          run.ranks[r]!.tokensPerExpert.slice(j * L, (j + 1) * L).reduce((n, v) => n + v, 0),
        );
        expect(dispatch.comm!.peers!.sentBytes).toEqual(sent.map((n) => n * h * 4));
      }
    } finally {
      await pool.dispose();
    }
  });
});

test('a rank whose experts receive no token (one token per rank, E 8 top-1 over EP 4) still takes part and gives zero gradients', async () => {
  const a = args({ ep: 4, E: 8, k: 1, T: 1 });
  const pool = await createLayerPool(4, 'sab-ring', 10_000, moePoolMesh(a.layout));
  try {
    const run = await runMoe(pool, a);
    expect(run.expertLoad.slice(6)).toEqual([0, 0]);
    expect(run.ranks[3]!.expertRows).toEqual([0, 0]);
    expect(run.oracle.failures).toEqual([]);
  } finally {
    await pool.dispose();
  }
});

test('a skewed router (skew 3, E 8 top-2, capacity 1, EP 4) drops tokens and loads the low experts, and still equals one device', async () => {
  const a = args({ ep: 4, E: 8, k: 2, capacity: 1, skew: 3 });
  const plain = args({ ep: 4, E: 8, k: 2, capacity: 1 });
  const pool = await createLayerPool(4, 'sab-ring', 10_000, moePoolMesh(a.layout));
  try {
    const skewed = await runMoe(pool, a);
    const even = await runMoe(pool, plain);
    expect(skewed.oracle.failures).toEqual([]);
    expect(skewed.dropped).toBeGreaterThan(even.dropped);
    expect(skewed.straggler.rank).toBe(0);
  } finally {
    await pool.dispose();
  }
});
