import { describe, expect, test } from 'vitest';
import { moeConfig, type MoeConfig } from '../../../../src/reference/moe/config.ts';
import { auxLoss, zLoss } from '../../../../src/reference/moe/losses.ts';
import { randomArray } from '../../../../src/reference/random.ts';
import { expectNear, finiteDiffVjp } from '../../finite-diff.ts';

const cfg = (more: Partial<MoeConfig>): MoeConfig =>
  moeConfig({ numMoeExperts: 2, moeRouterTopk: 1, moeFfnHiddenSize: 1 }, { moeRouterPreSoftmax: true, ...more });

// Logits [ln 3, 0] give softmax [0.75, 0.25]; [0, ln 3] give [0.25, 0.75].
const l3 = Math.log(3);

describe('switch load-balancing loss: coeff · E/(k·T²) · Σ_e c_e · Σ_t S[t, e]', () => {
  test('balanced routing gives coeff · 1 (E·Σ f_e·P_e = 2 · (½·½ + ½·½))', () => {
    expect(auxLoss(cfg({ moeAuxLossCoeff: 0.01 }), [l3, 0, 0, l3], 2).loss).toBeCloseTo(0.01, 15);
  });

  test('both tokens on expert 0 give coeff · 2/4 · 2 · 1.5 = 1.5 · coeff', () => {
    expect(auxLoss(cfg({ moeAuxLossCoeff: 0.01 }), [l3, 0, l3, 0], 2).loss).toBeCloseTo(0.015, 15);
  });

  test('top-2 of 3 experts divides by k: counts [2, 2, 0], S columns [0.6+0.2, 0.3+0.5, …] ', () => {
    // token 0 softmax [0.6, 0.3, 0.1], token 1 [0.2, 0.5, 0.3]: top-2 {0, 1} and {1, 2} → c = [1, 2, 1]
    const s = [0.6, 0.3, 0.1, 0.2, 0.5, 0.3];
    const logits = s.map(Math.log);
    const c = moeConfig({ numMoeExperts: 3, moeRouterTopk: 2, moeFfnHiddenSize: 1 }, { moeAuxLossCoeff: 1 });
    const want = (3 / (2 * 4)) * (1 * 0.8 + 2 * 0.8 + 1 * 0.4);
    expect(auxLoss(c, logits, 2).loss).toBeCloseTo(want, 14);
  });

  test('sigmoid scores are normalised over the experts: σ(0) = ½ for both gives S = ½', () => {
    const c = cfg({ moeAuxLossCoeff: 1, moeRouterScoreFunction: 'sigmoid', moeRouterPreSoftmax: false });
    // one token, both logits 0: top-1 is expert 0 (tie → lower index), c = [1, 0], S = [½, ½]
    expect(auxLoss(c, [0, 0], 1).loss).toBeCloseTo(2 * 1 * 0.5, 12);
  });

  test('is 0 with a 0 coefficient, and its gradient matches finite differences', () => {
    expect(auxLoss(cfg({}), [l3, 0], 1).loss).toBe(0);
    for (const fn of ['softmax', 'sigmoid'] as const) {
      const c = moeConfig(
        { numMoeExperts: 4, moeRouterTopk: 2, moeFfnHiddenSize: 1 },
        { moeAuxLossCoeff: 0.3, moeRouterScoreFunction: fn },
      );
      const logits = Float64Array.from(randomArray(12, 5, 2));
      const fd = finiteDiffVjp((l) => [auxLoss(c, l, 3).loss], logits, [1]);
      expectNear(`aux ${fn}`, auxLoss(c, logits, 3).dLogits, fd, 1e-9);
    }
  });
});

describe('z-loss: coeff · mean_t logsumexp(l_t)²', () => {
  test('rows [0, 0] and [ln 3, 0] give coeff · (ln²2 + ln²4)/2 = 2.5 · coeff · ln²2', () => {
    expect(zLoss(cfg({ moeZLossCoeff: 0.001 }), [0, 0, l3, 0], 2).loss).toBeCloseTo(0.0025 * Math.LN2 ** 2, 15);
  });

  test('is 0 when off (null), and its gradient matches finite differences', () => {
    expect(zLoss(cfg({}), [1, 2], 1).loss).toBe(0);
    const c = moeConfig({ numMoeExperts: 4, moeRouterTopk: 2, moeFfnHiddenSize: 1 }, { moeZLossCoeff: 0.2 });
    const logits = Float64Array.from(randomArray(12, 6, 3));
    const fd = finiteDiffVjp((l) => [zLoss(c, l, 3).loss], logits, [1]);
    expectNear('z', zLoss(c, logits, 3).dLogits, fd, 1e-9);
  });
});
