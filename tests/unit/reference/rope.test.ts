import { describe, test } from 'vitest';
import { randomArray } from '../../../src/reference/random.ts';
import { ropeRef } from '../../../src/reference/rope.ts';
import { expectNear, finiteDiffVjp } from '../finite-diff.ts';

// rope is linear in x, so central differences are exact up to rounding (~1e-10); tolerance 1e-8.
const tol = 1e-8;

describe('rope twin', () => {
  test('its backward (rotation by −θ) matches finite differences', () => {
    const shape = [3, 2, 2, 6],
      opts = { positionOffset: 7, base: 500 };
    const x = randomArray(72, 1),
      dy = randomArray(72, 2);
    expectNear(
      'dx',
      ropeRef(dy, shape, opts, true),
      finiteDiffVjp((v) => ropeRef(v, shape, opts), x, dy),
      tol,
    );
  });

  test('a sequence shard with an offset equals the matching rows of the whole sequence', () => {
    const shape = [6, 1, 2, 4];
    const x = randomArray(48, 3);
    const whole = ropeRef(x, shape);
    const shard = ropeRef(x.subarray(24), [3, 1, 2, 4], { positionOffset: 3 });
    expectNear('rows 3..6', shard, whole.subarray(24), 1e-15);
  });
});
