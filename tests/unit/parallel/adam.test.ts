import { expect, it } from 'vitest';
import { adamState, adamStep } from '../../../src/parallel/adam.ts';

it('AdamW by hand: the first step moves each weight by lr·(g/(|g| + ε) + λ·w), the second by the bias-corrected moments', () => {
  const c = { lr: 0.1, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.01 };
  const w = Float32Array.of(1, -2, 0.5);
  const s = adamState(3);
  adamStep(w, Float32Array.of(0.5, -1, 0), s, c);
  // m̂ = g, v̂ = g²: u = g/(|g| + ε) = ±1 (0 where g = 0)
  expect(Array.from(w)).toEqual([1 - 0.1 * (1 + 0.01), -2 - 0.1 * (-1 - 0.02), 0.5 - 0.1 * 0.005].map(Math.fround));
  const w1 = Float32Array.from(w);
  adamStep(w, Float32Array.of(0.25, -1, 0), s, c);
  // element 0: m = 0.9·0.05 + 0.1·0.25 = 0.07, v = 0.999·0.00025 + 0.001·0.0625; m̂ = m/0.19, v̂ = v/(1 − 0.999²)
  const m = 0.9 * Math.fround(0.05) + 0.1 * 0.25;
  const v = 0.999 * Math.fround(0.001 * 0.25) + 0.001 * 0.0625;
  const u = m / 0.19 / (Math.sqrt(v / (1 - 0.999 ** 2)) + 1e-8);
  expect(w[0]).toBeCloseTo(w1[0]! - 0.1 * (u + 0.01 * w1[0]!), 6);
  expect(s.step).toBe(2);
  expect(() => adamStep(w, new Float32Array(2), s, c)).toThrow(/differ/);
});
