import { describe, expect, test } from 'vitest';
import { epDispatch, epSplits, expertMajorOrder } from '../../../src/parallel/ep-dispatch.ts';
import { scaleByExpert } from '../../../src/ranks/ep-dispatch-program.ts';
import { combinedOutput, combineTolerance, gatheredRows, routedTokens } from '../../ep-dispatch-cases.ts';
import { makeMesh } from '../comm/mesh-groups.ts';

describe.each(['in-process', 'message-port'] as const)('the alltoall token dispatcher over %s', (kind) => {
  test.each([
    { ep: 1, E: 4, k: 2 },
    { ep: 2, E: 4, k: 1 },
    { ep: 2, E: 8, k: 2 },
    { ep: 4, E: 4, k: 2 },
    { ep: 4, E: 8, k: 1 },
  ])(
    'at %o each expert gets the tokens a single-process gather routes to it, in rank then token order, and each token comes back combined',
    async ({ ep, E, k }) => {
      const m = makeMesh(kind, ep > 1 ? { dp: ep, ep } : {});
      const [T, h] = [6, 3];
      const inputs = [...Array(ep).keys()].map((q) => routedTokens(q, T, h, E, k));
      const results = await Promise.all(inputs.map((input, r) => epDispatch(m.comm(r, 'ep'), input, scaleByExpert)));
      // Expert e's rows on the rank that owns it are the single-process gather's.
      const local = E / ep;
      for (let e = 0; e < E; e++)
        expect(Array.from(results[Math.floor(e / local)]!.expertRows[e % local]!.data), `expert ${e}`).toEqual(
          gatheredRows(inputs, e),
        );
      results.forEach((res, q) => {
        const want = combinedOutput(inputs[q]!);
        res.y.data.forEach((v, i) =>
          expect(Math.abs(v - want[i]!), `rank ${q} element ${i}`).toBeLessThan(combineTolerance),
        );
      });
      m.close();
    },
  );

  test('E not divisible by the EP group is refused before anything moves', async () => {
    const m = makeMesh(kind, { dp: 4, ep: 4 });
    const input = routedTokens(0, 2, 2, 6, 1);
    await expect(epDispatch(m.comm(0, 'ep'), input, scaleByExpert)).rejects.toThrow(
      'epDispatch: 6 experts do not split over an EP group of 4; pick E divisible by ep.',
    );
    m.close();
  });
});

test('the splits and the chunk order follow Megatron’s preprocess and sort_chunks_by_idxs, by hand', () => {
  // ep 2, E 4 (2 local experts each). counts[q][e] picks of rank q's tokens for expert e.
  const counts = [
    [1, 2, 3, 4],
    [5, 0, 7, 8],
  ];
  expect(epSplits(counts, 0)).toEqual({
    splits: { send: [3, 7], recv: [3, 5] },
    chunks: [
      [1, 2],
      [5, 0],
    ],
  });
  expect(epSplits(counts, 1).splits).toEqual({ send: [5, 15], recv: [7, 15] });
  // Rank 1 receives source-major [q0: e2 ×3, e3 ×4][q1: e2 ×7, e3 ×8]; expert-major puts e2's 3 + 7 first.
  const order = expertMajorOrder(epSplits(counts, 1).chunks);
  expect(order).toEqual([0, 1, 2, 7, 8, 9, 10, 11, 12, 13, 3, 4, 5, 6, 14, 15, 16, 17, 18, 19, 20, 21]);
});
