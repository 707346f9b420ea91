import { describe, expect, test } from 'vitest';
import { rope, ropeBackward, type RopeOptions } from '../../../src/kernels/rope.ts';
import { randomArray } from '../../../src/reference/random.ts';
import { ropeRef } from '../../../src/reference/rope.ts';
import { download, expectClose, gpuCase, upload } from '../gpu-case.ts';

// Tolerance. θ = pos · ω is one float32 multiply of an exact position by ω rounded once from
// float64: |Δθ| ≤ 2ε·θ ≤ 2ε·posMax (ω ≤ 1). The quadrant reduction is exact to ~ε and the sin/cos
// polynomials to ~2ε. Each output is a·cos ± b·sin with |a|, |b| ≤ 1:
// |Δout| ≤ 2·(2ε·posMax + 4ε) + 4ε.
const eps = 2 ** -23;
const tolFor = (posMax: number): number => 2 * (2 * eps * posMax + 4 * eps) + 4 * eps;

const cases: { what: string; shape: number[]; options: RopeOptions }[] = [
  { what: 'one token with headDim 2', shape: [1, 1, 1, 2], options: {} },
  { what: 'odd sizes everywhere but headDim', shape: [7, 3, 5, 10], options: {} },
  {
    what: 'a long sequence shard at offset 500 (tall-skinny)',
    shape: [300, 1, 1, 4],
    options: { positionOffset: 500 },
  },
  {
    what: 'one token with many heads and a large headDim (short-wide), base 500000',
    shape: [1, 2, 16, 128],
    options: { base: 500000, positionOffset: 3 },
  },
  { what: 'the largest headDim at a far position', shape: [2, 1, 1, 512], options: { positionOffset: 20000 } },
];

describe('rope', () => {
  for (const { what, shape, options } of cases) {
    test(`forward and backward match the CPU twin for ${what} ${JSON.stringify(shape)}`, async () => {
      await gpuCase(async (ctx) => {
        const n = shape.reduce((a, d) => a * d, 1);
        const x = randomArray(n, 31 + n),
          dy = randomArray(n, 32 + n);
        const tol = tolFor((options.positionOffset ?? 0) + shape[0]);
        const out = upload(ctx, 'qRot', shape, new Float32Array(n));
        rope(ctx, upload(ctx, 'q', shape, x), out, options);
        expectClose('out', await download(ctx, out), ropeRef(x, shape, options), tol);
        const dx = upload(ctx, 'dq', shape, new Float32Array(n));
        ropeBackward(ctx, upload(ctx, 'dqRot', shape, dy), dx, options);
        expectClose('dx', await download(ctx, dx), ropeRef(dy, shape, options, true), tol);
      });
    });
  }

  test('a rank holding tokens [4, 9) with positionOffset 4 reproduces those rows of the whole sequence', async () => {
    await gpuCase(async (ctx) => {
      const shape = [9, 2, 3, 8],
        n = 9 * 48;
      const x = randomArray(n, 41);
      const whole = upload(ctx, 'kRot', shape, new Float32Array(n));
      rope(ctx, upload(ctx, 'k', shape, x), whole);
      const shard = upload(ctx, 'kRotShard', [5, 2, 3, 8], new Float32Array(5 * 48));
      rope(ctx, upload(ctx, 'kShard', [5, 2, 3, 8], x.subarray(4 * 48)), shard, { positionOffset: 4 });
      expectClose('shard', await download(ctx, shard), (await download(ctx, whole)).subarray(4 * 48), 0);
    });
  });

  test('an odd headDim is refused before dispatch with a clear error', async () => {
    await gpuCase(async (ctx) => {
      const q = upload(ctx, 'q', [2, 1, 2, 5], new Float32Array(20));
      expect(() => rope(ctx, q, q)).toThrow(/rope: tensor "q" has shape \[2, 1, 2, 5\]; headDim 5 must be even/);
    });
  });

  test("a headDim beyond the kernel's frequency table is refused before dispatch", async () => {
    await gpuCase(async (ctx) => {
      const q = upload(ctx, 'q', [1, 1, 1, 514], new Float32Array(514));
      expect(() => rope(ctx, q, q)).toThrow(
        /rope: tensor "q" has shape \[1, 1, 1, 514\]; headDim 514 exceeds the kernel's 512/,
      );
    });
  });

  test('mismatched shapes and non-4-D inputs are refused before dispatch, naming the tensor', async () => {
    await gpuCase(async (ctx) => {
      const q = upload(ctx, 'q', [2, 1, 2, 4], new Float32Array(16));
      const out = upload(ctx, 'qRot', [2, 2, 1, 4], new Float32Array(16));
      expect(() => rope(ctx, q, out)).toThrow(
        /rope: tensor "qRot" has shape \[2, 2, 1, 4\] but \[2, 1, 2, 4\] is required/,
      );
      expect(() => ropeBackward(ctx, out, q)).toThrow(
        /ropeBackward: tensor "q" has shape \[2, 1, 2, 4\] but \[2, 2, 1, 4\] is required/,
      );
      const flat = upload(ctx, 'flat', [4, 4], new Float32Array(16));
      expect(() => rope(ctx, flat, flat)).toThrow(/rope: tensor "flat" has shape \[4, 4\]; rope needs 4 dimensions/);
    });
  });
});
