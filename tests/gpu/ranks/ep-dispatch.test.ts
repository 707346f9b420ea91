import { describe, expect, test } from 'vitest';
import type { MeshDegrees } from '../../../src/mesh/rank-layout.ts';
import { rankMesh } from '../../../src/mesh/rank-layout.ts';
import { RankPool } from '../../../src/ranks/pool.ts';
import { combinedOutput, combineTolerance, gatheredRows, routedTokens } from '../../ep-dispatch-cases.ts';
import { poolTransports } from './helpers.ts';

// The alltoall token dispatcher on rank workers (host data; stand-in experts scale by e + 1): each
// EP group of the mesh dispatches its own tokens at once, checked against a single-process gather
// of the same group's tokens.
describe.each(poolTransports)('the alltoall token dispatcher on rank workers over %s', (transport) => {
  test.each([
    { degrees: { tp: 2, dp: 2, ep: 2 }, E: 8, k: 2 },
    { degrees: { dp: 4, ep: 4 }, E: 8, k: 2 },
    { degrees: { dp: 4, ep: 4 }, E: 4, k: 1 },
  ] as { degrees: Partial<MeshDegrees>; E: number; k: number }[])(
    'in every EP group of %o each expert gets the gathered tokens routed to it and every token comes back combined',
    async ({ degrees, E, k }) => {
      const layout = rankMesh(degrees);
      const pool = await RankPool.create({
        mesh: { degrees },
        transport,
        timeoutMs: 5_000,
        commCapacityBytes: 1 << 16,
      });
      const [T, h] = [16, 8];
      // Every worker its own tokens (seeded by its global rank).
      const inputs = [...Array(layout.world).keys()].map((r) => routedTokens(r, T, h, E, k));
      const results = await pool.run('epDispatch', (r) => ({
        experts: E,
        topk: k,
        shape: [T, h] as const,
        data: inputs[r]!.x.data,
        topIdx: inputs[r]!.topIdx as number[],
        topProb: inputs[r]!.topProb as number[],
      }));
      for (const members of layout.groups('ep')) {
        const local = E / members.length;
        for (let e = 0; e < E; e++) {
          const owner = members[Math.floor(e / local)]!;
          expect(Array.from(results[owner]!.expertRows[e % local]!.data), `group ${members} expert ${e}`).toEqual(
            gatheredRows(
              members.map((q) => inputs[q]!),
              e,
            ),
          );
        }
      }
      results.forEach((res, r) => {
        const want = combinedOutput(inputs[r]!);
        res.y.data.forEach((v, i) =>
          expect(Math.abs(v - want[i]!), `rank ${r} element ${i}`).toBeLessThan(combineTolerance),
        );
      });
      // Each rank: the counts' all-gather, then the dispatch and combine all-to-alls with bytes per peer.
      const events = await pool.traces();
      for (let r = 0; r < layout.world; r++)
        expect(events.filter((e) => e.rank === r).map((e) => e.op)).toEqual(['allGather', 'allToAll', 'allToAll']);
      await pool.dispose();
    },
  );
});
