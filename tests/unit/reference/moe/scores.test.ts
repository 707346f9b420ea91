import { describe, expect, test } from 'vitest';
import { moeConfig } from '../../../../src/reference/moe/config.ts';
import { routeTokens } from '../../../../src/reference/moe/routing.ts';
import { moeNormalizeRowsKernel, moeSigmoidKernel, normalizedRows } from '../../../../src/reference/moe/scores.ts';
import { checkKernelShapes } from '../../../../src/reference/kernel-spec.ts';
import { randomArray } from '../../../../src/reference/random.ts';
import { expectNear } from '../../finite-diff.ts';

// The twins of moeSigmoid and moeNormalizeRows, composed with the top-k as the GPU chain runs them
// (σ, top-k of σ, the picks' values normalised), against routeTokens' sigmoid probs (float64: 1e-15).

describe('the sigmoid-score kernels’ twins', () => {
  test('σ then the picks’ values normalised give routeTokens’ top-2 sigmoid probs', () => {
    const T = 6;
    const E = 5;
    const k = 2;
    const c = moeConfig(
      { numMoeExperts: E, moeRouterTopk: k, moeFfnHiddenSize: 1 },
      { moeRouterScoreFunction: 'sigmoid' },
    );
    const logits = Float64Array.from(randomArray(T * E, 17, 3));
    const r = routeTokens(c, logits, T);
    const dims = (shape: number[]) => checkKernelShapes(moeSigmoidKernel, ['a', 'b'], [shape, shape]);
    const [s] = moeSigmoidKernel.twin([logits, new Float64Array(T * E)], dims([T, E]), {});
    const v = Float64Array.from(r.topIdx, (e, i) => s[Math.floor(i / k) * E + e]);
    const [p] = moeNormalizeRowsKernel.twin([v, new Float64Array(T * k)], dims([T, k]), {});
    expectNear('probs', p, r.topProb, 1e-15);
  });

  test('normalizedRows divides each row by its sum + 1e-20: [1, 3] → [¼, ¾], a zero row stays 0', () => {
    expect(Array.from(normalizedRows([1, 3, 0, 0], 2))).toEqual([0.25, 0.75, 0, 0]);
  });
});
