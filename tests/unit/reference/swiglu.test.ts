import { describe, test } from 'vitest';
import { randomArray } from '../../../src/reference/random.ts';
import { swigluBackwardRef, swigluRef } from '../../../src/reference/swiglu.ts';
import { expectNear, finiteDiffVjp } from '../finite-diff.ts';

// Central differences (h = 1e-5) on smooth O(1..10) functions: error ~1e-9; tolerance 1e-7.
const tol = 1e-7;

describe('swiglu twin', () => {
  test('its dg and du match finite differences, gates from −8 to 8 included', () => {
    const g = randomArray(40, 1, 8),
      u = randomArray(40, 2, 2),
      dy = randomArray(40, 3);
    const { dg, du } = swigluBackwardRef(g, u, dy);
    expectNear(
      'dg',
      dg,
      finiteDiffVjp((v) => swigluRef(v, u), g, dy),
      tol,
    );
    expectNear(
      'du',
      du,
      finiteDiffVjp((v) => swigluRef(g, v), u, dy),
      tol,
    );
  });
});
