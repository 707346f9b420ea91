import { describe, expect, test } from 'vitest';
import { moeTopk } from '../../../../src/kernels/moe/topk.ts';
import { moeTopkKernel } from '../../../../src/reference/moe/topk.ts';
import { randomArray, rng } from '../../../../src/reference/random.ts';
import { download, expectClose, gpuCase, upload } from '../../gpu-case.ts';
import { gpuAndTwin } from './kernel-case.ts';

// The GPU ranks the same float32 values by the same rule and procedure as the twin: indices and
// values must equal it exactly (tolerance 0), ties included.

describe('moeTopk (router top-k, ties to the lower expert)', () => {
  const cases: [number, number, number][] = [
    [1, 1, 1],
    [37, 8, 2],
    [300, 64, 8],
    [1000, 16, 4],
  ];
  for (const [rows, n, k] of cases)
    test(`random scores [${rows}, ${n}], k = ${k}: indices and values equal the twin`, async () => {
      await gpuCase(async (ctx) => {
        const scores = randomArray(rows * n, rows + n, 3);
        const [idx, vals] = await gpuAndTwin(
          ctx,
          moeTopkKernel,
          [
            { shape: [rows, n], data: scores },
            { shape: [rows, k], data: new Float32Array(rows * k).fill(-7) },
            { shape: [rows, k], data: new Float32Array(rows * k).fill(-7) },
          ],
          { k },
        );
        expectClose('indices', idx.gpu, idx.twin, 0);
        expectClose('values', vals.gpu, vals.twin, 0);
      });
    });

  test('scores from three levels tie everywhere: the GPU picks the lower index first, as the twin does', async () => {
    await gpuCase(async (ctx) => {
      const rows = 500,
        n = 12,
        k = 5;
      const next = rng(3);
      const scores = Float32Array.from({ length: rows * n }, () => Math.floor(next() * 3) / 4);
      const [idx] = await gpuAndTwin(
        ctx,
        moeTopkKernel,
        [
          { shape: [rows, n], data: scores },
          { shape: [rows, k], data: new Float32Array(rows * k) },
          { shape: [rows, k], data: new Float32Array(rows * k) },
        ],
        { k },
      );
      expectClose('indices', idx.gpu, idx.twin, 0);
    });
  });

  test('a hand case: [1, 3, 3, 2, 3] picks 1, 2, 4, 3', async () => {
    await gpuCase(async (ctx) => {
      const s = upload(ctx, 'scores', [1, 5], Float32Array.from([1, 3, 3, 2, 3]));
      const i = upload(ctx, 'indices', [1, 4], new Float32Array(4));
      const v = upload(ctx, 'values', [1, 4], new Float32Array(4));
      moeTopk(ctx, s, i, v, 4);
      expect(Array.from(await download(ctx, i))).toEqual([1, 2, 4, 3]);
      expect(Array.from(await download(ctx, v))).toEqual([3, 3, 3, 2]);
    });
  });

  test('k outside [1, n] and a wrong output shape are refused before dispatch', async () => {
    await gpuCase(async (ctx) => {
      const s = upload(ctx, 'scores', [2, 4], new Float32Array(8));
      const i = upload(ctx, 'indices', [2, 5], new Float32Array(10));
      expect(() => moeTopk(ctx, s, i, i, 5)).toThrow('moeTopk: option "k" is 5; it must be an integer in [1, 4].');
      expect(() => moeTopk(ctx, s, i, i, 2)).toThrow(
        /moeTopk: tensor "indices" has shape \[2, 5\] but \[2, 2\] is required/,
      );
      expectClose('untouched', await download(ctx, i), new Float32Array(10), 0);
    });
  });
});
