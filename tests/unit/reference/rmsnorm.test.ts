import { describe, test } from 'vitest';
import { randomArray } from '../../../src/reference/random.ts';
import { rmsnormBackwardRef, rmsnormRef } from '../../../src/reference/rmsnorm.ts';
import { expectNear, finiteDiffVjp } from '../finite-diff.ts';

// Central differences (h = 1e-5) on smooth O(1) functions: error ~1e-9; tolerance 1e-7.
const tol = 1e-7;

describe('rmsnorm twin', () => {
  test('its dx and dg match finite differences', () => {
    const h = 7;
    const x = randomArray(35, 1, 2),
      g = randomArray(h, 2),
      dy = randomArray(35, 3);
    const { dx, dg } = rmsnormBackwardRef(x, g, dy, h);
    expectNear(
      'dx',
      dx,
      finiteDiffVjp((v) => rmsnormRef(v, g, h).y, x, dy),
      tol,
    );
    expectNear(
      'dg',
      dg,
      finiteDiffVjp((v) => rmsnormRef(x, v, h).y, g, dy),
      tol,
    );
  });

  test('its dx matches finite differences with a large eps and h = 1', () => {
    const x = randomArray(6, 4),
      g = randomArray(1, 5),
      dy = randomArray(6, 6);
    const { dx } = rmsnormBackwardRef(x, g, dy, 1, 0.3);
    expectNear(
      'dx',
      dx,
      finiteDiffVjp((v) => rmsnormRef(v, g, 1, 0.3).y, x, dy),
      tol,
    );
  });

  test('dg over token blocks (sequence-parallel shards) sums to dg over all tokens', () => {
    const h = 5;
    const x = randomArray(40, 7),
      g = randomArray(h, 8),
      dy = randomArray(40, 9);
    const whole = rmsnormBackwardRef(x, g, dy, h).dg;
    const parts = [
      [0, 3],
      [3, 4],
      [4, 8],
    ].map(([a, b]) => rmsnormBackwardRef(x.subarray(a * h, b * h), g, dy.subarray(a * h, b * h), h).dg);
    expectNear(
      'Σ dg blocks',
      whole.map((_, j) => parts.reduce((s, p) => s + p[j], 0)),
      whole,
      1e-14,
    );
  });
});
