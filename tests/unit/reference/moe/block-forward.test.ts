import { describe, expect, test } from 'vitest';
import { moeForward } from '../../../../src/reference/moe/block.ts';
import { moeConfig, type MoeConfig } from '../../../../src/reference/moe/config.ts';
import { seededMoeWeights } from '../../../../src/reference/moe/weights.ts';
import { randomArray } from '../../../../src/reference/random.ts';
import { sigmoid } from '../../../../src/reference/swiglu.ts';
import { expectNear } from '../../finite-diff.ts';

/*
 * The block's forward (permute → grouped GEMMs → combine) against each token computed alone, in
 * plain loops: y_t = Σ_{kept picks j} p_j · fc2_e(silu(x_t·gate_e) ⊙ (x_t·up_e)) + shared(x_t).
 * Both are float64 sums of the same terms in different orders: tolerance 1e-12.
 */
const h = 5;
const T = 9;

function tokenAlone(
  x: Float64Array,
  t: number,
  fc1: Float64Array,
  fc2: Float64Array,
  e: number,
  f: number,
): Float64Array {
  const y = new Float64Array(h);
  const base1 = e * h * 2 * f;
  const base2 = e * f * h;
  for (let j = 0; j < f; j++) {
    let g = 0;
    let u = 0;
    for (let i = 0; i < h; i++) {
      g += x[t * h + i] * fc1[base1 + i * 2 * f + j];
      u += x[t * h + i] * fc1[base1 + i * 2 * f + f + j];
    }
    const a = g * sigmoid(g) * u;
    for (let c = 0; c < h; c++) y[c] += a * fc2[base2 + j * h + c];
  }
  return y;
}

describe('the MoE block forward equals each token computed alone', () => {
  const cases: [string, MoeConfig][] = [
    [
      'top-2 of 4, dropless, shared expert',
      moeConfig({ numMoeExperts: 4, moeRouterTopk: 2, moeFfnHiddenSize: 3 }, { moeSharedExpertIntermediateSize: 2 }),
    ],
    [
      'top-2 of 4, capacity 0.5',
      moeConfig({ numMoeExperts: 4, moeRouterTopk: 2, moeFfnHiddenSize: 3 }, { moeExpertCapacityFactor: 0.5 }),
    ],
    [
      'top-1 of 3, sigmoid',
      moeConfig({ numMoeExperts: 3, moeRouterTopk: 1, moeFfnHiddenSize: 2 }, { moeRouterScoreFunction: 'sigmoid' }),
    ],
  ];
  for (const [name, c] of cases)
    test(name, () => {
      const w = seededMoeWeights(c, h, 40);
      const x = Float64Array.from(randomArray(T * h, 41));
      const r = moeForward(c, h, T, x, w);
      const k = c.moeRouterTopk;
      const want = new Float64Array(T * h);
      for (let t = 0; t < T; t++) {
        for (let j = 0; j < k; j++) {
          const i = t * k + j;
          if (r.routing.kept[i] === 0) continue;
          const o = tokenAlone(x, t, w.fc1, w.fc2, r.routing.topIdx[i], c.moeFfnHiddenSize);
          o.forEach((v, col) => (want[t * h + col] += r.routing.topProb[i] * v));
        }
        if (w.shared) {
          const o = tokenAlone(x, t, w.shared.fc1, w.shared.fc2, 0, c.moeSharedExpertIntermediateSize!);
          o.forEach((v, col) => (want[t * h + col] += v));
        }
      }
      expectNear('y', r.y, want, 1e-12);
      if (c.moeExpertCapacityFactor !== null) expect(r.routing.dropped).toBeGreaterThan(0);
      // probs of each token's picks sum to 1 before dropping (softmax after top-k; sigmoid top-1 is σ itself)
      if (c.moeRouterScoreFunction === 'softmax')
        for (let t = 0; t < T; t++) expect(r.routing.topProb[t * k] + r.routing.topProb[t * k + 1]).toBeCloseTo(1, 14);
    });
});
