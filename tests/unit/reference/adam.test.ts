import { describe, expect, test } from 'vitest';
import { adamCorrections, adamDriftBound, adamHyper, adamRef } from '../../../src/reference/adam.ts';
import { rng } from '../../../src/reference/random.ts';

describe('adam twin', () => {
  test('its first step moves each parameter by lr against the sign of its gradient (m̂ = g, v̂ = g²)', () => {
    const h = adamHyper(0.01);
    const p = Float64Array.from([1, -2, 0.5]),
      m = new Float64Array(3),
      v = new Float64Array(3);
    adamRef(p, [0.3, -4, 1e-3], m, v, h, 1);
    // p − lr·g/(|g| + ε): ε = 1e-8 shifts the third by lr·1e-8/1e-3 = 1e-7 at most.
    expect(p[0]).toBeCloseTo(0.99, 8);
    expect(p[1]).toBeCloseTo(-1.99, 8);
    expect(Math.abs(p[2] - 0.49)).toBeLessThan(2e-7);
    expect([...m]).toEqual([0.1 * 0.3, 0.1 * -4, 0.1 * 1e-3].map((x) => expect.closeTo(x, 15)));
  });

  test('its second step follows the formulas by hand', () => {
    const h = adamHyper(0.1);
    const p = Float64Array.from([2]),
      m = new Float64Array(1),
      v = new Float64Array(1);
    adamRef(p, [1], m, v, h, 1);
    adamRef(p, [3], m, v, h, 2);
    const m2 = 0.9 * 0.1 + 0.1 * 3,
      v2 = 0.999 * 0.001 + 0.001 * 9;
    const p1 = 2 - 0.1 / (1 + 1e-8);
    const want = p1 - (0.1 * (m2 / (1 - 0.81))) / (Math.sqrt(v2 / (1 - 0.998001)) + 1e-8);
    expect(p[0]).toBeCloseTo(want, 14);
  });

  test('it minimises a badly scaled quadratic ½Σ aᵢpᵢ² (a from 0.01 to 100) to within 1e-2 of 0 in 400 steps', () => {
    const a = [0.01, 1, 100];
    const p = Float64Array.from([1, -1, 1]),
      m = new Float64Array(3),
      v = new Float64Array(3);
    for (let k = 1; k <= 400; k++)
      adamRef(
        p,
        a.map((ai, i) => ai * p[i]),
        m,
        v,
        adamHyper(0.05),
        k,
      );
    for (const x of p) expect(Math.abs(x)).toBeLessThan(1e-2);
  });

  test('a step below 1 is refused with the reason', () => {
    expect(() => adamCorrections(adamHyper(0.1), 0)).toThrow(/step must be a whole number ≥ 1, got 0/);
  });
});

describe('adamDriftBound', () => {
  // Two Adam steps from the same weights on gradients g and g + e, |e| ≤ δ elementwise: every
  // weight's difference must lie within lr·bound, over gradients of every size (incl. ≈ 0 and
  // sign flips), and the bound must be tight where |g| ≫ δ (not merely the 2/√b cap).
  test('bounds the weights of two Adam runs whose gradients differ by at most δ, and is tight for large gradients', () => {
    const h = adamHyper(0.01);
    const n = 4000;
    const rand = rng(7);
    const g = [0, 1].map(() => Float64Array.from({ length: n }, (_, i) => (rand() * 2 - 1) * 10 ** -(i % 9)));
    const delta = [1e-6, 2e-6];
    const bound = adamDriftBound(g, delta, h);
    const run = (grads: readonly Float64Array[]) => {
      const p = new Float64Array(n),
        m = new Float64Array(n),
        v = new Float64Array(n);
      grads.forEach((gk, k) => adamRef(p, gk, m, v, h, k + 1));
      return p;
    };
    const a = run(g);
    for (let trial = 0; trial < 20; trial++) {
      const b = run(g.map((gk, k) => gk.map((x) => x + (rand() * 2 - 1) * delta[k])));
      for (let i = 0; i < n; i++) expect(Math.abs(a[i] - b[i])).toBeLessThanOrEqual(h.lr * bound[i] * (1 + 1e-9));
    }
    // |g| ≥ 0.1 against δ ≈ 1e-6: the bound is of order δ/|g|, not the cap 2√2.
    const large = [...bound].filter((_, i) => g.every((gk) => Math.abs(gk[i]) >= 0.1));
    expect(large.length).toBeGreaterThan(100);
    expect(Math.max(...large)).toBeLessThan(1e-3);
    // Gradients of exactly zero leave only the cap: 2 / √(min_j b_kj), about 2√2 at step 2.
    expect(adamDriftBound([[0], [0]], [1e-6, 1e-6], h)[0]).toBeCloseTo(2 + 2 / Math.sqrt(0.4997), 2);
  });
});
