import { describe, expect, test } from 'vitest';
import { createLayerPool } from '../../../src/session/pools.ts';
import { expectMoeEpMatches, moeEpProblem, rankRows, type MoeEpCase } from '../../moe-ep-cases.ts';
import { poolTransports } from './helpers.ts';

// The MoE block with expert parallelism on rank workers (GPU backend: router GEMM, permute, the
// grouped GEMMs, combine and their backward in WGSL; the all-to-alls over the pool's transport)
// equals moeForward/moeBackward of the concatenated tokens (dropless) or of each rank's tokens
// (capacity, dropped per routing call as Megatron's router does: tests/moe-ep-cases.ts). Tolerance as the one-device GPU block
// (tests/gpu/kernels/moe/moe-block.test.ts): float32 through three GEMM-like stages over O(1)
// values, 1e-4 absolute. The rank's router GEMM is float32: error ≤ γ_h·Σ|x_i w_i| ≤ h·2^-24·h·0.5
// ≈ 7.6e-6 (|x| < 1, |w| < 0.5); the oracle's routing margin is asserted above 1e-5, so equal
// picks follow from the bound.
const [T, h] = [8, 16];
const tol = 1e-4;

const cases: MoeEpCase[] = [
  { ep: 2, E: 4, k: 1 },
  { ep: 2, E: 8, k: 2 },
  { ep: 4, E: 8, k: 1 },
  { ep: 4, E: 4, k: 2 },
  { ep: 2, E: 4, k: 2, capacity: 1 },
  { ep: 4, E: 8, k: 1, capacity: 1 },
];

describe.each(poolTransports)('the MoE block with expert parallelism on rank workers over %s', (transport) => {
  test.each(cases)(
    "at %o equals the single-device block (dropless: of the concatenated tokens; capacity: of each rank's)",
    async (cs) => {
      const p = moeEpProblem(cs, T, h);
      const degrees = { dp: cs.ep, ep: cs.ep };
      // The layer's rank workers: the MoE program runs WGSL kernels (the collectives-only worker has none).
      const pool = await createLayerPool(cs.ep, transport, 10_000, { degrees });
      const results = await pool.run('moeEp', (q) => ({
        config: p.c,
        h,
        seed: 41,
        x: Float32Array.from(rankRows(p.x, q, T, h)),
        dy: Float32Array.from(rankRows(p.dy, q, T, h)),
      }));
      expectMoeEpMatches(p, results, T, h, tol, 1e-5);
      const events = await pool.traces();
      for (let r = 0; r < cs.ep; r++)
        expect(events.filter((e) => e.rank === r && e.stream === 'comm').map((e) => e.op)).toEqual([
          'allGather',
          'allToAll',
          'allToAll',
          'allReduce',
          'allReduce',
          'allToAll',
          'allToAll',
          'allReduce',
        ]);
      await pool.dispose();
    },
  );
});

test('a rank whose experts receive no token (one token per rank, E 8 top-1 over EP 4) still takes part and gives zero gradients', async () => {
  const cs = { ep: 4, E: 8, k: 1 };
  const p = moeEpProblem(cs, 1, h);
  const counts = new Array<number>(cs.E).fill(0);
  p.want.topIdx.forEach((e) => counts[e]!++);
  expect(counts.slice(6)).toEqual([0, 0]);
  const pool = await createLayerPool(4, 'sab-ring', 10_000, { degrees: { dp: 4, ep: 4 } });
  const results = await pool.run('moeEp', (q) => ({
    config: p.c,
    h,
    seed: 41,
    x: Float32Array.from(rankRows(p.x, q, 1, h)),
    dy: Float32Array.from(rankRows(p.dy, q, 1, h)),
  }));
  expectMoeEpMatches(p, results, 1, h, tol, 1e-5);
  await pool.dispose();
});
