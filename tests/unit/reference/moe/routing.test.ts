import { describe, expect, test } from 'vitest';
import { expertCapacity, moeConfig, type MoeConfig } from '../../../../src/reference/moe/config.ts';
import { permutationOf } from '../../../../src/reference/moe/permute.ts';
import { routeTokens, routingMargin } from '../../../../src/reference/moe/routing.ts';
import { topkIndices, topkRowsRef } from '../../../../src/reference/moe/topk.ts';
import { rng } from '../../../../src/reference/random.ts';

const base = (E: number, k: number, more: Partial<MoeConfig> = {}): MoeConfig =>
  moeConfig({ numMoeExperts: E, moeRouterTopk: k, moeFfnHiddenSize: 1 }, { moeRouterPreSoftmax: true, ...more });

describe('top-k breaks ties toward the lower index', () => {
  test('equal values are picked lowest index first, and the rest in descending value', () => {
    expect(topkIndices([1, 3, 3, 2, 3], 5, 4)).toEqual([1, 2, 4, 3]);
    expect(topkIndices([0, 0, 0, 0], 4, 2)).toEqual([0, 1]);
    expect(topkIndices([-1, 5, -1, 5], 4, 3)).toEqual([1, 3, 0]);
    expect(topkIndices([2, 1], 2, 2)).toEqual([0, 1]);
  });

  test('row-wise top-k reads each row at its offset and returns values with the indices', () => {
    const { indices, values } = topkRowsRef([0.5, 0.5, 0.1, 9, 8, 9], 2, 3, 2);
    expect(Array.from(indices)).toEqual([0, 1, 0, 2]);
    expect(Array.from(values)).toEqual([0.5, 0.5, 9, 9]);
  });

  test('a token whose logits tie routes to the lower experts under every score function', () => {
    const logits = [0.3, 0.7, 0.7, 0.7];
    for (const c of [
      base(4, 2),
      base(4, 2, { moeRouterPreSoftmax: false }),
      base(4, 2, { moeRouterPreSoftmax: false, moeRouterScoreFunction: 'sigmoid' }),
    ])
      expect(Array.from(routeTokens(c, logits, 1).topIdx)).toEqual([1, 2]);
  });
});

describe('capacity and dropping (apply_router_token_dropping)', () => {
  // 4 tokens, 2 experts, k = 1, pre-softmax. Logits [l, 0] give expert 0 probability σ(l); all four
  // prefer expert 0 with probabilities ordered 0.6 < 0.7 < 0.8 < 0.9 for tokens 0, 2, 3, 1.
  const p = [0.6, 0.9, 0.7, 0.8];
  const logits = p.flatMap((q) => [Math.log(q / (1 - q)), 0]);

  test('capacity is ceil(T·k/E · factor)', () => {
    expect(expertCapacity(base(2, 1, { moeExpertCapacityFactor: 1 }), 4)).toBe(2);
    expect(expertCapacity(base(8, 2, { moeExpertCapacityFactor: 1.25 }), 10)).toBe(4); // ceil(2.5 · 1.25 = 3.125)
    expect(expertCapacity(base(2, 1), 4)).toBeNull();
  });

  test('policy probs keeps each expert’s most probable tokens', () => {
    const r = routeTokens(base(2, 1, { moeExpertCapacityFactor: 1 }), logits, 4);
    expect(r.capacity).toBe(2);
    expect(Array.from(r.kept)).toEqual([0, 1, 0, 1]);
    expect(Array.from(r.tokensPerExpert)).toEqual([2, 0]);
    expect(r.dropped).toBe(2);
  });

  test('policy position keeps each expert’s earliest tokens', () => {
    const r = routeTokens(base(2, 1, { moeExpertCapacityFactor: 1, moeTokenDropPolicy: 'position' }), logits, 4);
    expect(Array.from(r.kept)).toEqual([1, 1, 0, 0]);
  });

  test('equal probabilities keep the earlier token', () => {
    const same = [0.8, 0.9, 0.8, 0.8].flatMap((q) => [Math.log(q / (1 - q)), 0]);
    const r = routeTokens(base(2, 1, { moeExpertCapacityFactor: 1 }), same, 4);
    expect(Array.from(r.kept)).toEqual([1, 1, 0, 0]);
  });

  test('a capacity above T drops nothing; a capacity of exactly T drops nothing either', () => {
    expect(routeTokens(base(2, 1, { moeExpertCapacityFactor: 2.5 }), logits, 4).dropped).toBe(0); // C = 5 > 4
    expect(routeTokens(base(2, 1, { moeExpertCapacityFactor: 2 }), logits, 4).dropped).toBe(0); // C = 4
  });

  test('a dropped pick of a top-2 token leaves its other pick', () => {
    // E = 2, k = 2: every token picks both experts; C = ceil(4·2/2 · 0.5) = 2 per expert.
    const r = routeTokens(base(2, 2, { moeExpertCapacityFactor: 0.5 }), logits, 4);
    // expert 0 keeps tokens 1, 3 (p 0.9, 0.8); expert 1 keeps tokens 0, 2 (p 0.4, 0.3)
    expect(Array.from(r.topIdx)).toEqual([0, 1, 0, 1, 0, 1, 0, 1]);
    expect(Array.from(r.kept)).toEqual([0, 1, 1, 0, 0, 1, 1, 0]);
  });
});

describe('the permutation groups rows by expert, tokens in their original order inside each', () => {
  test('tables of a hand-routed batch', () => {
    // T = 4, E = 3, k = 2 (pre-softmax): token 0 → experts 2, 0; token 1 → 1, 2; token 2 → 0, 2; token 3 → 2, 1
    const logits = [2, 0, 3, 0, 3, 2, 3, 0, 2, 0, 2, 3];
    const r = routeTokens(base(3, 2), logits, 4);
    expect(Array.from(r.topIdx)).toEqual([2, 0, 1, 2, 0, 2, 2, 1]);
    const perm = permutationOf(r);
    expect(Array.from(perm.offsets)).toEqual([0, 2, 4, 8]);
    expect(Array.from(perm.rowToken)).toEqual([0, 2, 1, 3, 0, 1, 2, 3]);
    expect(Array.from(perm.rowPick)).toEqual([1, 4, 2, 7, 0, 3, 5, 6]);
    expect(Array.from(perm.pickRow)).toEqual([4, 0, 2, 5, 1, 6, 7, 3]);
  });

  test('dropped picks get no row and mark −1', () => {
    const logits = [0.6, 0.9, 0.7, 0.8].flatMap((q) => [Math.log(q / (1 - q)), 0]);
    const perm = permutationOf(routeTokens(base(2, 1, { moeExpertCapacityFactor: 1 }), logits, 4));
    expect(Array.from(perm.rowToken)).toEqual([1, 3]);
    expect(Array.from(perm.pickRow)).toEqual([-1, 0, -1, 1]);
  });
});

describe('capacity invariants over seeded batches', () => {
  // 40 tokens, 6 experts, top-2, logits with a skew toward the low experts so that drops happen
  const T = 40;
  const E = 6;
  for (const policy of ['probs', 'position'] as const)
    for (const cf of [0.5, 1, 1.25])
      test(`policy ${policy}, factor ${cf}: each expert keeps min(C, routed) picks, the best by its policy`, () => {
        const c = base(E, 2, { moeExpertCapacityFactor: cf, moeTokenDropPolicy: policy });
        const next = rng(Math.round(cf * 100) + (policy === 'probs' ? 1 : 2));
        const logits = Array.from({ length: T * E }, (_, i) => next() * 4 - (i % E) * 0.5);
        const r = routeTokens(c, logits, T);
        const C = expertCapacity(c, T)!;
        expect(r.capacity).toBe(C);
        let dropped = 0;
        for (let e = 0; e < E; e++) {
          const picks = Array.from(r.topIdx.keys()).filter((i) => r.topIdx[i] === e);
          const kept = picks.filter((i) => r.kept[i] === 1);
          const lost = picks.filter((i) => r.kept[i] === 0);
          dropped += lost.length;
          expect(kept.length).toBe(Math.min(C, picks.length));
          expect(r.tokensPerExpert[e]).toBe(kept.length);
          for (const a of kept)
            for (const b of lost)
              if (policy === 'probs') expect(r.topProb[a]).toBeGreaterThanOrEqual(r.topProb[b]);
              else expect(a).toBeLessThan(b); // picks are indexed t·k + j: an earlier token
        }
        expect(r.dropped).toBe(dropped);
        if (cf === 0.5) expect(dropped).toBeGreaterThan(0);
      });
});

describe('routingMargin: how far a routing is from flipping', () => {
  test('the gap between the k-th pick and the best unpicked expert', () => {
    const c = base(4, 2, { moeRouterPreSoftmax: false }); // ranks by the logits
    // token 0 picks 3, 2 (next 1: gap 1); token 1 picks 5, 1.5 (next 1.25: gap 0.25)
    const logits = [3, 1, 2, 0.5, 0, 5, 1.5, 1.25];
    const r = routeTokens(c, logits, 2);
    expect(routingMargin(c, logits, r)).toBe(0.25);
  });

  test('a tie has margin 0; k = E cannot flip (Infinity); capacity by probs counts kept against dropped', () => {
    const c = base(3, 1, { moeRouterPreSoftmax: false, moeRouterScoreFunction: 'sigmoid' });
    expect(routingMargin(c, [1, 1, 0], routeTokens(c, [1, 1, 0], 1))).toBe(0);
    const all = base(2, 2);
    expect(routingMargin(all, [1, 2], routeTokens(all, [1, 2], 1))).toBe(Infinity);
    const p = [0.6, 0.9, 0.7, 0.8];
    const logits = p.flatMap((q) => [Math.log(q / (1 - q)), 0]);
    const cap = base(2, 1, { moeExpertCapacityFactor: 1 });
    // expert 0 keeps 0.9, 0.8 and drops 0.7, 0.6: 0.1; the top-1 gaps are p − (1 − p) ≥ 0.2
    expect(routingMargin(cap, logits, routeTokens(cap, logits, 4))).toBeCloseTo(0.1, 12);
  });
});
