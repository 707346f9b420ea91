import { describe, expect, test } from 'vitest';
import { moeBackward, moeForward, type MoeWeights } from '../../../../src/reference/moe/block.ts';
import { moeConfig, type MoeConfig } from '../../../../src/reference/moe/config.ts';
import { seededMoeWeights } from '../../../../src/reference/moe/weights.ts';
import { randomArray } from '../../../../src/reference/random.ts';
import { expectNear, finiteDiffVjp } from '../../finite-diff.ts';

/*
 * The MoE block's backward against float64 central differences of its objective
 * L = ⟨dy, y⟩ + aux + z, element by element, for the input and every weight. The routing (top-k,
 * capacity) is piecewise constant; the seeded data keeps every decision ≥ 1e-4 from a tie, so a
 * step h = 1e-5 never flips one. Central differences err by O(h²·L''') ≈ 1e-10 and rounding by
 * O(ε₆₄·|L|/h) ≈ 1e-10 here; the tolerance 1e-7 is far below the O(1e-2) error of a dropped term
 * (the smallest gradient entries checked are ~1e-3).
 */
const tol = 1e-7;
const h = 4;
const T = 6;

type Piece = 'x' | 'router' | 'fc1' | 'fc2' | 'sharedFc1' | 'sharedFc2';

function withPiece(w: MoeWeights, x: Float64Array, piece: Piece, v: Float64Array): { w: MoeWeights; x: Float64Array } {
  if (piece === 'x') return { w, x: v };
  if (piece === 'sharedFc1' || piece === 'sharedFc2') {
    const s = w.shared!;
    return { w: { ...w, shared: piece === 'sharedFc1' ? { ...s, fc1: v } : { ...s, fc2: v } }, x };
  }
  return { w: { ...w, [piece]: v }, x };
}

function pieceOf(w: MoeWeights, x: Float64Array, piece: Piece): Float64Array {
  if (piece === 'x') return x;
  if (piece === 'sharedFc1') return w.shared!.fc1;
  if (piece === 'sharedFc2') return w.shared!.fc2;
  return w[piece];
}

function checkGradients(c: MoeConfig, seed: number): { dropped: number } {
  const w = seededMoeWeights(c, h, seed);
  const x = Float64Array.from(randomArray(T * h, seed + 10));
  const dy = Float64Array.from(randomArray(T * h, seed + 11));
  const fwd = moeForward(c, h, T, x, w);
  const g = moeBackward(c, h, x, w, fwd, dy);
  const objective = (ww: MoeWeights, xx: Float64Array): number => {
    const r = moeForward(c, h, T, xx, ww);
    let s = r.aux + r.z;
    r.y.forEach((v, i) => (s += v * dy[i]));
    return s;
  };
  const grads: Record<Piece, Float64Array | undefined> = {
    x: g.dx,
    router: g.router,
    fc1: g.fc1,
    fc2: g.fc2,
    sharedFc1: g.shared?.fc1,
    sharedFc2: g.shared?.fc2,
  };
  for (const piece of Object.keys(grads) as Piece[]) {
    const got = grads[piece];
    if (got === undefined) continue;
    const fd = finiteDiffVjp(
      (v) => {
        const p = withPiece(w, x, piece, v);
        return [objective(p.w, p.x)];
      },
      pieceOf(w, x, piece),
      [1],
    );
    expectNear(piece, got, fd, tol);
  }
  return { dropped: fwd.routing.dropped };
}

describe('the MoE block backward equals finite differences of ⟨dy, y⟩ + aux + z', () => {
  const E = 4;
  const cases: [string, MoeConfig, boolean][] = [
    [
      'softmax after top-2 with aux and z losses, dropless',
      moeConfig(
        { numMoeExperts: E, moeRouterTopk: 2, moeFfnHiddenSize: 3 },
        { moeAuxLossCoeff: 0.1, moeZLossCoeff: 0.01 },
      ),
      false,
    ],
    [
      'pre-softmax top-1 with a shared expert, aux and z losses',
      moeConfig(
        { numMoeExperts: E, moeRouterTopk: 1, moeFfnHiddenSize: 3 },
        { moeRouterPreSoftmax: true, moeAuxLossCoeff: 0.1, moeZLossCoeff: 0.01, moeSharedExpertIntermediateSize: 2 },
      ),
      false,
    ],
    [
      'sigmoid top-2 with capacity 0.5 dropping by probability',
      moeConfig(
        { numMoeExperts: E, moeRouterTopk: 2, moeFfnHiddenSize: 3 },
        { moeRouterScoreFunction: 'sigmoid', moeAuxLossCoeff: 0.1, moeExpertCapacityFactor: 0.5 },
      ),
      true,
    ],
    [
      'pre-softmax top-2 with capacity 0.5 dropping by position and a shared expert',
      moeConfig(
        { numMoeExperts: E, moeRouterTopk: 2, moeFfnHiddenSize: 3 },
        {
          moeRouterPreSoftmax: true,
          moeZLossCoeff: 0.01,
          moeExpertCapacityFactor: 0.5,
          moeTokenDropPolicy: 'position',
          moeSharedExpertIntermediateSize: 2,
        },
      ),
      true,
    ],
    [
      'sigmoid top-1',
      moeConfig(
        { numMoeExperts: E, moeRouterTopk: 1, moeFfnHiddenSize: 3 },
        { moeRouterScoreFunction: 'sigmoid', moeAuxLossCoeff: 0.1 },
      ),
      false,
    ],
  ];
  for (const [name, c, drops] of cases)
    test(`${name}: dx and every weight gradient within ${tol}`, () => {
      const { dropped } = checkGradients(c, 70);
      // the capacity cases must drop picks (else they would not test the dropped path)
      if (drops) expect(dropped).toBeGreaterThan(0);
      else expect(dropped).toBe(0);
    });
});
