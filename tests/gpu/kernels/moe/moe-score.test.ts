import { describe, test } from 'vitest';
import { float32Tolerance } from '../../../../src/reference/compare.ts';
import { moeNormalizeRowsKernel, moeSigmoidKernel } from '../../../../src/reference/moe/scores.ts';
import { randomArray } from '../../../../src/reference/random.ts';
import { expectClose, gpuCase } from '../../gpu-case.ts';
import { gpuAndTwin } from './kernel-case.ts';

// The router's sigmoid scores and the picks' normalisation on the GPU against their float64 twins
// on the same float32 inputs (ε = 2^-23). σ(l) = e/(1 + e) or 1/(1 + e), e = exp(−|l|) within
// (3 + 2|l|) ulp: one add and one divide more, so |Δσ| ≤ ε(7 + 2L) for |l| ≤ L (σ ≤ 1).
// p = v / (Σ v + 1e-20), v in (0, 1]: the sum of `cols` terms ≤ 1 is off by float32Tolerance(cols),
// relative float32Tolerance(cols) / D_min, and the divide rounds: |Δp| ≤ float32Tolerance(cols)/D_min + 2ε.
const eps = 2 ** -23;

describe('the MoE router’s sigmoid scores on the GPU (moeSigmoid, moeNormalizeRows)', () => {
  const cases: [number, number, number][] = [
    // rows, cols, L
    [1, 1, 1],
    [48, 8, 6],
    [300, 64, 20],
    [3, 300, 4],
  ];
  for (const [T, E, L] of cases)
    test(`[${T}, ${E}], |l| ≤ ${L}: scores and normalised rows equal their twins`, async () => {
      await gpuCase(async (ctx) => {
        const [s] = await gpuAndTwin(
          ctx,
          moeSigmoidKernel,
          [
            { shape: [T, E], data: randomArray(T * E, T + E, L) },
            { shape: [T, E], data: new Float32Array(T * E).fill(9) },
          ],
          {},
        );
        expectClose('scores', s.gpu, s.twin, eps * (7 + 2 * L));
        // values in (0, 1], as σ's are: rows sum to at least D_min
        const v = Float32Array.from(randomArray(T * E, 2 * T + E), (x) => 0.505 + x / 2);
        let dMin = Infinity;
        for (let t = 0; t < T; t++)
          dMin = Math.min(
            dMin,
            v.subarray(t * E, (t + 1) * E).reduce((a, b) => a + b, 0),
          );
        const [p] = await gpuAndTwin(
          ctx,
          moeNormalizeRowsKernel,
          [
            { shape: [T, E], data: v },
            { shape: [T, E], data: new Float32Array(T * E).fill(9) },
          ],
          {},
        );
        expectClose('probs', p.gpu, p.twin, float32Tolerance(E) / dMin + 2 * eps);
      });
    });
});
