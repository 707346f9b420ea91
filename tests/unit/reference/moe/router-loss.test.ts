import { describe, expect, test } from 'vitest';
import { moeConfig } from '../../../../src/reference/moe/config.ts';
import { auxLoss, zLoss } from '../../../../src/reference/moe/losses.ts';
import { auxLossArgs, auxLossRows, zLossArgs, zLossRows } from '../../../../src/reference/moe/router-loss.ts';
import { randomArray } from '../../../../src/reference/random.ts';
import { expectNear, finiteDiffVjp } from '../../finite-diff.ts';

// The row-wise twins of the moeZLoss and moeAuxLoss kernels, float64: their gradients against
// central differences (h = 1e-5, O(1) functions: error ≈ 1e-10, tolerance 1e-8), and, with the
// config's arguments, their rows' sum and gradient against auxLoss and zLoss — which sum these rows
// after scoring the logits themselves (auxScores) — within float64 rounding (1e-13).

const T = 5;
const E = 6;
const logits = Float64Array.from(randomArray(T * E, 41, 3));
/** A weight per row: the VJP checks every row's gradient, not only their sum's. */
const rowWeights = randomArray(T, 42);

describe('the router-loss kernels’ twins', () => {
  test('z-loss rows: d logits match central differences', () => {
    const a = 0.37;
    const fd = finiteDiffVjp((l) => zLossRows(l, E, a).rows, logits, rowWeights);
    const { dLogits } = zLossRows(logits, E, a);
    const weighted = dLogits.map((d, i) => d * rowWeights[Math.floor(i / E)]);
    expectNear('z', weighted, fd, 1e-8);
  });

  for (const score of ['softmax', 'sigmoid'] as const)
    test(`aux-loss rows (${score}): d logits match central differences with the counts held fixed`, () => {
      const counts = [3, 0, 1, 4, 2, 0];
      const b = 0.8;
      const fd = finiteDiffVjp((l) => auxLossRows(l, E, counts, b, score).rows, logits, rowWeights);
      const { dLogits } = auxLossRows(logits, E, counts, b, score);
      const weighted = dLogits.map((d, i) => d * rowWeights[Math.floor(i / E)]);
      expectNear(`aux ${score}`, weighted, fd, 1e-8);
    });

  for (const score of ['softmax', 'sigmoid'] as const)
    test(`with the config’s arguments, the rows sum to auxLoss and zLoss over a group of 12 tokens (${score})`, () => {
      const c = moeConfig(
        { numMoeExperts: E, moeRouterTopk: 2, moeFfnHiddenSize: 1 },
        { moeAuxLossCoeff: 0.3, moeZLossCoeff: 0.02, moeRouterScoreFunction: score },
      );
      const group = { counts: [5, 2, 7, 4, 3, 3], tokens: 12 };
      const aArgs = auxLossArgs(c, group.tokens);
      const zArgs = zLossArgs(c, group.tokens);
      if (aArgs === null || zArgs === null) throw new Error('both losses are on in this config');
      const aux = auxLossRows(logits, E, group.counts, aArgs.b, aArgs.score);
      const want = auxLoss(c, logits, T, group);
      expect(Math.abs(aux.rows.reduce((s, v) => s + v, 0) - want.loss)).toBeLessThanOrEqual(1e-13);
      expectNear('aux d logits', aux.dLogits, want.dLogits, 1e-13);
      const z = zLossRows(logits, E, zArgs.a);
      const wantZ = zLoss(c, logits, T, group.tokens);
      expect(Math.abs(z.rows.reduce((s, v) => s + v, 0) - wantZ.loss)).toBeLessThanOrEqual(1e-13);
      expectNear('z d logits', z.dLogits, wantZ.dLogits, 1e-13);
    });

  test('the arguments are null where Megatron computes no loss: aux coefficient 0, z coefficient None', () => {
    const c = moeConfig({ numMoeExperts: E, moeRouterTopk: 2, moeFfnHiddenSize: 1 }, {});
    expect(auxLossArgs(c, 4)).toBeNull();
    expect(zLossArgs(c, 4)).toBeNull();
  });
});
