import { expect } from 'vitest';

/**
 * Vector–Jacobian product of `f` at `x` by float64 central differences:
 * out[k] = Σ_i dy[i] · (f(x + h·e_k)[i] − f(x − h·e_k)[i]) / 2h, i.e. ∂(dy·f(x))/∂x_k.
 * The truncation error is O(h²·f'''), the rounding error O(ε·|f|/h); h = 1e-5 balances both
 * near 1e-10 for the smooth, O(1) functions tested here.
 */
export function finiteDiffVjp(
  f: (x: Float64Array) => ArrayLike<number>,
  x: ArrayLike<number>,
  dy: ArrayLike<number>,
  h = 1e-5,
): Float64Array {
  const at = Float64Array.from(x);
  const out = new Float64Array(at.length);
  const dot = (y: ArrayLike<number>): number => {
    let s = 0;
    for (let i = 0; i < y.length; i++) s += dy[i] * y[i];
    return s;
  };
  for (let k = 0; k < at.length; k++) {
    const x0 = at[k];
    at[k] = x0 + h;
    const plus = dot(f(at));
    at[k] = x0 - h;
    const minus = dot(f(at));
    at[k] = x0;
    out[k] = (plus - minus) / (2 * h);
  }
  return out;
}

/** Asserts max |actual − expected| ≤ tol, naming the worst index. */
export function expectNear(what: string, actual: ArrayLike<number>, expected: ArrayLike<number>, tol: number): void {
  expect(actual.length, `${what}: length`).toBe(expected.length);
  let worst = 0;
  let at = -1;
  for (let i = 0; i < actual.length; i++) {
    const d = Math.abs(actual[i] - expected[i]);
    if (Number.isNaN(d)) {
      worst = Infinity;
      at = i;
      break;
    }
    if (d > worst) {
      worst = d;
      at = i;
    }
  }
  expect(
    worst,
    `${what}: max abs error ${worst} at ${at} (got ${actual[at]}, want ${expected[at]})`,
  ).toBeLessThanOrEqual(tol);
}
