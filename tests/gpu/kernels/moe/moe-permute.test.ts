import { describe, expect, test } from 'vitest';
import { moePermute, moeUnpermute } from '../../../../src/kernels/moe/permute.ts';
import { float32Tolerance } from '../../../../src/reference/compare.ts';
import { moeConfig } from '../../../../src/reference/moe/config.ts';
import {
  moeCombineProbGradKernel,
  moePermuteKernel,
  moeUnpermuteKernel,
  permutationOf,
} from '../../../../src/reference/moe/permute.ts';
import { routeTokens } from '../../../../src/reference/moe/routing.ts';
import { randomArray } from '../../../../src/reference/random.ts';
import { download, expectClose, gpuCase, upload } from '../../gpu-case.ts';
import { gpuAndTwin } from './kernel-case.ts';

// Tolerances, against the float64 twin on the same float32 inputs (|x|, |yp|, |dy| ≤ 1, |w| ≤ 1):
// permute is one float32 multiply per element (≤ ½ ulp: 2^-24); unpermute sums k products:
// float32Tolerance(k); the prob gradient is a dot product over h: float32Tolerance(h).

/** Permutation tables of a seeded routing of T tokens over E experts (top-k, a capacity factor that drops some picks). */
function tables(T: number, E: number, k: number, capacity: number | null) {
  const c = moeConfig(
    { numMoeExperts: E, moeRouterTopk: k, moeFfnHiddenSize: 1 },
    { moeRouterPreSoftmax: true, moeExpertCapacityFactor: capacity },
  );
  const r = routeTokens(c, randomArray(T * E, T + E, 2), T);
  const perm = permutationOf(r);
  return {
    N: perm.rowToken.length,
    dropped: r.dropped,
    rowToken: Float32Array.from(perm.rowToken),
    pickRow: Float32Array.from(perm.pickRow),
    probs: Float32Array.from(r.topProb, (p, i) => p * r.kept[i]),
  };
}

describe('MoE permute, unpermute (the weighted combine) and the combine’s prob gradient', () => {
  const cases: [number, number, number, number, number | null][] = [
    // T, h, E, k, capacity factor
    [1, 1, 1, 1, null],
    [16, 8, 4, 2, null],
    [64, 33, 8, 2, 0.75],
    [300, 64, 16, 4, 1],
  ];
  for (const [T, h, E, k, cf] of cases)
    test(`T = ${T}, h = ${h}, E = ${E}, k = ${k}, capacity ${cf ?? 'none'}: every output equals its twin`, async () => {
      const t = tables(T, E, k, cf);
      if (cf !== null && cf < 1) expect(t.dropped).toBeGreaterThan(0);
      await gpuCase(async (ctx) => {
        const x = randomArray(T * h, 1);
        const scale = randomArray(t.N, 2);
        const [xp] = await gpuAndTwin(
          ctx,
          moePermuteKernel,
          [
            { shape: [T, h], data: x },
            { shape: [t.N], data: t.rowToken },
            { shape: [t.N], data: scale },
            { shape: [t.N, h], data: new Float32Array(t.N * h).fill(9) },
          ],
          {},
        );
        expectClose('xp', xp.gpu, xp.twin, 2 ** -24);

        const yp = randomArray(t.N * h, 3);
        const [y] = await gpuAndTwin(
          ctx,
          moeUnpermuteKernel,
          [
            { shape: [t.N, h], data: yp },
            { shape: [T, k], data: t.pickRow },
            { shape: [T, k], data: t.probs },
            { shape: [T, h], data: new Float32Array(T * h).fill(9) },
          ],
          {},
        );
        expectClose('y', y.gpu, y.twin, float32Tolerance(k));

        const dy = randomArray(T * h, 4);
        const [dw] = await gpuAndTwin(
          ctx,
          moeCombineProbGradKernel,
          [
            { shape: [T, h], data: dy },
            { shape: [t.N, h], data: yp },
            { shape: [T, k], data: t.pickRow },
            { shape: [T, k], data: new Float32Array(T * k).fill(9) },
          ],
          {},
        );
        expectClose('dw', dw.gpu, dw.twin, float32Tolerance(h));
      });
    });

  test('a dropped pick (−1) contributes nothing and a wrong table shape is refused, naming it', async () => {
    await gpuCase(async (ctx) => {
      // T = 2, k = 2: token 0 → rows 1, (dropped); token 1 → rows 0, 2
      const yp = upload(ctx, 'yp', [3, 2], Float32Array.from([1, 2, 10, 20, 100, 200]));
      const pickRow = upload(ctx, 'pickRow', [2, 2], Float32Array.from([1, -1, 0, 2]));
      const w = upload(ctx, 'w', [2, 2], Float32Array.from([0.5, 7, 1, 2]));
      const y = upload(ctx, 'y', [2, 2], new Float32Array(4));
      moeUnpermute(ctx, yp, pickRow, w, y);
      const yGpu = await download(ctx, y);
      expectClose('y', yGpu, [5, 10, 201, 402], 0);
      const x = upload(ctx, 'x', [2, 2], new Float32Array(4));
      const bad = upload(ctx, 'rowToken', [3, 1], new Float32Array(3));
      expect(() => moePermute(ctx, x, bad, bad, yp)).toThrow(
        /moePermute: tensor "rowToken" has shape \[3, 1\] but \[3\] is required/,
      );
    });
  });
});
