import { describe, expect, test } from 'vitest';
import { softmax, softmaxBackward, type SoftmaxOptions } from '../../../src/kernels/softmax.ts';
import { float32Tolerance } from '../../../src/reference/compare.ts';
import { randomArray } from '../../../src/reference/random.ts';
import { softmaxBackwardRef, softmaxRef } from '../../../src/reference/softmax.ts';
import { download, expectClose, gpuCase, upload } from '../gpu-case.ts';

const eps = 2 ** -23;
const numel = (shape: readonly number[]): number => shape.reduce((a, d) => a * d, 1);

// Tolerances. Forward: y = exp(a − m)/S with a = scale·x. WGSL's exp is accurate to (3 + 2|a − m|)
// ulp, and S sums `cols` terms ≤ 1 with S ≥ 1, so |Δy| ≤ ε·(4 + 2·span) + float32Tolerance(cols),
// span = max |a − m| (≤ 2·|scale|·max|x|). Backward: the row dot sums `cols` terms ≤ max|dy|, then
// one subtract and two multiplies: |Δdx| ≤ |scale|·float32Tolerance(cols + 4, max|dy|).
const forwardTol = (cols: number, span: number): number => eps * (4 + 2 * span) + float32Tolerance(cols);
const backwardTol = (cols: number, scale: number, dyMax: number): number =>
  Math.abs(scale) * float32Tolerance(cols + 4, dyMax);

const cases: { what: string; shape: number[]; options: SoftmaxOptions }[] = [
  { what: 'a single element', shape: [1], options: {} },
  { what: 'a short row of odd width', shape: [3, 7], options: { scale: 0.5 } },
  { what: 'tall-skinny rows', shape: [301, 3], options: {} },
  { what: 'short-wide rows (a full workgroup striding)', shape: [2, 2500], options: { scale: 0.125 } },
  { what: 'batched attention scores with a causal mask', shape: [3, 17, 33], options: { scale: 0.25, causal: true } },
  { what: 'a causal sequence shard holding rows [5, 10)', shape: [2, 5, 12], options: { causal: true, rowOffset: 5 } },
];

describe('softmax', () => {
  for (const { what, shape, options } of cases) {
    test(`forward and backward match the CPU twin for ${what} ${JSON.stringify(shape)}`, async () => {
      await gpuCase(async (ctx) => {
        const n = numel(shape),
          cols = shape[shape.length - 1],
          scale = options.scale ?? 1;
        const x = randomArray(n, 11 + n, 4),
          dyv = randomArray(n, 12 + n);
        const xt = upload(ctx, 'x', shape, x),
          yt = upload(ctx, 'y', shape, new Float32Array(n));
        softmax(ctx, xt, yt, options);
        const y = await download(ctx, yt);
        expectClose('y', y, softmaxRef(x, shape, options), forwardTol(cols, 8 * Math.abs(scale)));

        const dxt = upload(ctx, 'dx', shape, new Float32Array(n));
        softmaxBackward(ctx, yt, upload(ctx, 'dy', shape, dyv), dxt, { scale });
        expectClose(
          'dx',
          await download(ctx, dxt),
          softmaxBackwardRef(y, dyv, cols, scale),
          backwardTol(cols, scale, 1),
        );
      });
    });
  }

  test('the causal mask with a row offset zeroes exactly the columns past each global row', async () => {
    await gpuCase(async (ctx) => {
      const shape = [4, 6];
      const yt = upload(ctx, 'y', shape, new Float32Array(24));
      softmax(ctx, upload(ctx, 'x', shape, randomArray(24, 3)), yt, { causal: true, rowOffset: 1 });
      const y = await download(ctx, yt);
      for (let i = 0; i < 4; i++) {
        const row = Array.from(y.subarray(i * 6, i * 6 + 6));
        row.forEach((v, j) => (j > i + 1 ? expect(v).toBe(0) : expect(v).toBeGreaterThan(0)));
      }
    });
  });

  test('a fully masked row (global row before key 0) gives all zeros forward and backward', async () => {
    await gpuCase(async (ctx) => {
      const shape = [3, 4];
      const x = randomArray(12, 4),
        dyv = randomArray(12, 5);
      const yt = upload(ctx, 'y', shape, new Float32Array(12).fill(7));
      softmax(ctx, upload(ctx, 'x', shape, x), yt, { causal: true, rowOffset: -2 });
      const y = await download(ctx, yt);
      expect(Array.from(y.subarray(0, 8))).toEqual(new Array(8).fill(0));
      expect(y[8]).toBe(1); // global row 0 keeps only column 0
      const dxt = upload(ctx, 'dx', shape, new Float32Array(12).fill(7));
      softmaxBackward(ctx, yt, upload(ctx, 'dy', shape, dyv), dxt);
      const dx = await download(ctx, dxt);
      expect(
        Array.from(dx.subarray(0, 8)).every((v) => v === 0),
        `dx of masked rows: ${dx.subarray(0, 8)}`,
      ).toBe(true);
    });
  });

  test('inputs of ±1e4 stay finite and match the twin', async () => {
    await gpuCase(async (ctx) => {
      const shape = [4, 5];
      // Integers near ±1e4 are exact in float32, so a − m is exact and only exp and the sum round.
      const x = Float32Array.from([
        1e4, -1e4, 9999, 1e4, 0, -1e4, -1e4, -1e4, -9998, -1e4, 1e4, 1e4, 1e4, 1e4, 1e4, -1e4, 1e4, -1e4, 1e4, -1e4,
      ]);
      const yt = upload(ctx, 'y', shape, new Float32Array(20));
      softmax(ctx, upload(ctx, 'x', shape, x), yt);
      const y = await download(ctx, yt);
      expect(y.every(Number.isFinite)).toBe(true);
      expectClose('y', y, softmaxRef(x, shape), forwardTol(5, 2));
    });
  });

  test('mismatched shapes are refused before dispatch, naming the tensor', async () => {
    await gpuCase(async (ctx) => {
      const x = upload(ctx, 'scores', [2, 3, 4], new Float32Array(24));
      const y = upload(ctx, 'probs', [2, 4, 3], new Float32Array(24));
      expect(() => softmax(ctx, x, y)).toThrow(
        /softmax: tensor "probs" has shape \[2, 4, 3\] but \[2, 3, 4\] is required/,
      );
      expect(() => softmaxBackward(ctx, x, y, x)).toThrow(
        /softmaxBackward: tensor "probs" has shape \[2, 4, 3\] but \[2, 3, 4\] is required/,
      );
    });
  });
});
