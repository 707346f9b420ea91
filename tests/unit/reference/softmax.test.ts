import { describe, expect, test } from 'vitest';
import { randomArray } from '../../../src/reference/random.ts';
import { softmaxBackwardRef, softmaxRef } from '../../../src/reference/softmax.ts';
import { expectNear, finiteDiffVjp } from '../finite-diff.ts';

// Central differences with h = 1e-5 on O(1) smooth functions are accurate to ~1e-9; 1e-7 leaves
// margin while an error in the analytic backward (O(0.01..1)) fails by orders of magnitude.
const tol = 1e-7;

describe('softmax twin', () => {
  test('its backward matches finite differences, unmasked and scaled', () => {
    const shape = [2, 3, 5];
    const x = randomArray(30, 1, 2),
      dy = randomArray(30, 2);
    const y = softmaxRef(x, shape, { scale: 0.7 });
    const fd = finiteDiffVjp((v) => softmaxRef(v, shape, { scale: 0.7 }), x, dy);
    expectNear('dx', softmaxBackwardRef(y, dy, 5, 0.7), fd, tol);
  });

  test('its backward matches finite differences under a causal mask with a row offset, masked rows included', () => {
    const shape = [2, 4, 6];
    const opts = { causal: true, rowOffset: -1, scale: 1.3 };
    const x = randomArray(48, 3, 2),
      dy = randomArray(48, 4);
    const y = softmaxRef(x, shape, opts);
    const fd = finiteDiffVjp((v) => softmaxRef(v, shape, opts), x, dy);
    expectNear('dx', softmaxBackwardRef(y, dy, 6, 1.3), fd, tol);
  });

  test('each unmasked row sums to one and a fully masked row is all zeros', () => {
    const y = softmaxRef(randomArray(12, 5), [3, 4], { causal: true, rowOffset: -1 });
    expect(Array.from(y.subarray(0, 4))).toEqual([0, 0, 0, 0]);
    expect(y[4]).toBeCloseTo(1, 12); // global row 0 keeps only column 0
    expect(y[8] + y[9]).toBeCloseTo(1, 12);
    expect(y[10]).toBe(0);
  });
});
