import { describe, expect, test } from 'vitest';
import { float32Tolerance } from '../../../../src/reference/compare.ts';
import { moeAuxLossKernel, moeZLossKernel } from '../../../../src/reference/moe/router-loss.ts';
import { randomArray } from '../../../../src/reference/random.ts';
import { sigmoid } from '../../../../src/reference/swiglu.ts';
import { expectClose, gpuCase } from '../../gpu-case.ts';
import { gpuAndTwin } from './kernel-case.ts';

// The router's z-loss and aux-loss rows and their logits gradients on the GPU against their
// float64 twins on the same float32 inputs, logits |l| ≤ L, E experts. Tolerances (ε = 2^-23; WGSL:
// exp within (3 + 2|x|) ulp, log within 2^-21 absolute on [0.5, 2] and 3 ulp elsewhere):
//   u = exp(l − m) (argument within [−2L, 0], its subtraction rounded): δu = ε(4 + 6L) relative;
//   σ(l) = e/(1 + e) or 1/(1 + e), e = exp(−|l|): δu = ε(7 + 2L);
//   D = Σ_e u_e, terms ≤ 1: δD = δu + float32Tolerance(E)/D_min (D_min = 1 for softmax: the max term is 1).
//   z:   lse = m + log D: Δlse = δD + 2^-21 + 3ε·ln E + ε|lse|;  z = a·lse²: Δz = a(2|lse|Δlse + 2ε·lse²);
//        dl = 2a·lse·u/D (u/D ≤ 1): Δdl = 2a(Δlse + |lse|(δD + δu + 3ε)).
//   aux: b·Σ c_e u_e / D ≤ b·c_max: Δaux = b·c_max(2δD + 2ε); dl = (b·c_e − aux)·u/D (softmax,
//        u/D ≤ 1) or (b·c_e − aux)/D · u(1 − u) (sigmoid, |b·c_e − aux|/D ≤ b·c_max/D_min):
//        Δdl = b·c_max/D_min · (4δD + 6ε).
const eps = 2 ** -23;

/** min over rows of Σ_e σ(l[t, e]) (float64): the sigmoid scores' smallest normaliser. */
function minSigmoidSum(logits: Float32Array, E: number): number {
  let min = Infinity;
  for (let t = 0; t < logits.length / E; t++) {
    let d = 0;
    for (let e = 0; e < E; e++) d += sigmoid(logits[t * E + e]);
    min = Math.min(min, d);
  }
  return min;
}

/** max over rows of |logsumexp(l_t)| (float64). */
function maxAbsLse(logits: Float32Array, E: number): number {
  let max = 0;
  for (let t = 0; t < logits.length / E; t++) {
    let m = -Infinity;
    for (let e = 0; e < E; e++) m = Math.max(m, logits[t * E + e]);
    let s = 0;
    for (let e = 0; e < E; e++) s += Math.exp(logits[t * E + e] - m);
    max = Math.max(max, Math.abs(m + Math.log(s)));
  }
  return max;
}

// T tokens, E experts, logit bound L; the last case has more experts than a workgroup's lanes.
const cases: [number, number, number][] = [
  [1, 1, 1],
  [16, 4, 2],
  [64, 8, 4],
  [300, 64, 3],
  [3, 300, 8],
];

describe('the MoE router losses on the GPU (moeZLoss, moeAuxLoss)', () => {
  for (const [T, E, L] of cases)
    test(`T = ${T}, E = ${E}, |l| ≤ ${L}: z and aux rows and d logits equal their twins`, async () => {
      const logits = randomArray(T * E, T + 7 * E, L);
      const lse = maxAbsLse(logits, E);
      await gpuCase(async (ctx) => {
        const a = 0.001 / (2 * T);
        const [z, dz] = await gpuAndTwin(
          ctx,
          moeZLossKernel,
          [
            { shape: [T, E], data: logits },
            { shape: [T], data: new Float32Array(T).fill(9) },
            { shape: [T, E], data: new Float32Array(T * E).fill(9) },
          ],
          { a },
        );
        const dSoft = eps * (4 + 6 * L) + float32Tolerance(E);
        const dLse = dSoft + 2 ** -21 + 3 * eps * Math.log(Math.max(E, 1)) + eps * lse;
        expectClose('z', z.gpu, z.twin, a * (2 * lse * dLse + 2 * eps * lse * lse));
        expectClose('dz', dz.gpu, dz.twin, 2 * a * (dLse + lse * (2 * dSoft + 3 * eps)));

        // counts of a group of 2T tokens, top-2: integers in [0, 4T]
        const counts = Float32Array.from(randomArray(E, 3 * T + E), (v) => Math.round((v + 1) * 2 * T));
        const cMax = Math.max(...counts);
        const b = (0.01 * E) / (2 * (2 * T) ** 2);
        for (const score of ['softmax', 'sigmoid'] as const) {
          const [aux, da] = await gpuAndTwin(
            ctx,
            moeAuxLossKernel,
            [
              { shape: [T, E], data: logits },
              { shape: [E], data: counts },
              { shape: [T], data: new Float32Array(T).fill(9) },
              { shape: [T, E], data: new Float32Array(T * E).fill(9) },
            ],
            { b, score },
          );
          const dMin = score === 'softmax' ? 1 : minSigmoidSum(logits, E);
          const du = score === 'softmax' ? eps * (4 + 6 * L) : eps * (7 + 2 * L);
          const dD = du + float32Tolerance(E) / dMin;
          expectClose(`aux ${score}`, aux.gpu, aux.twin, b * cMax * (2 * dD + 2 * eps));
          expectClose(`d aux ${score}`, da.gpu, da.twin, ((b * cMax) / dMin) * (4 * dD + 6 * eps));
        }
      });
    });

  test('a one-hot count makes the softmax aux gradient of each row sum to zero, and a wrong counts shape is refused', async () => {
    await gpuCase(async (ctx) => {
      const T = 4;
      const E = 5;
      const counts = Float32Array.from([0, 3, 0, 0, 0]);
      const [, da] = await gpuAndTwin(
        ctx,
        moeAuxLossKernel,
        [
          { shape: [T, E], data: randomArray(T * E, 9, 2) },
          { shape: [E], data: counts },
          { shape: [T], data: new Float32Array(T) },
          { shape: [T, E], data: new Float32Array(T * E) },
        ],
        { b: 1, score: 'softmax' },
      );
      // Σ_e ∂aux_t/∂l_e = Σ_e S_e (b·c_e − aux_t) = aux_t − aux_t = 0 (softmax is shift invariant)
      for (let t = 0; t < T; t++) {
        const row = da.gpu.subarray(t * E, (t + 1) * E);
        expect(Math.abs(row.reduce((s, v) => s + v, 0))).toBeLessThan(1e-6);
        expect(row[1]).toBeGreaterThan(0);
      }
      await expect(
        gpuAndTwin(
          ctx,
          moeAuxLossKernel,
          [
            { shape: [T, E], data: new Float32Array(T * E) },
            { shape: [E + 1], data: new Float32Array(E + 1) },
            { shape: [T], data: new Float32Array(T) },
            { shape: [T, E], data: new Float32Array(T * E) },
          ],
          { b: 1, score: 'softmax' },
        ),
      ).rejects.toThrow(/moeAuxLoss: tensor "counts" has shape \[6\] but \[5\] is required/);
    });
  });
});
