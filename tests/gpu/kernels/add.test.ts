import { describe, expect, test } from 'vitest';
import { add, addInPlace } from '../../../src/kernels/add.ts';
import { addRef } from '../../../src/reference/add.ts';
import { randomArray } from '../../../src/reference/random.ts';
import { download, expectClose, gpuCase, upload } from '../gpu-case.ts';

// One float32 add per element: the GPU and the twin round the same exact sum, so they agree
// bit for bit; tolerance 0.
describe('add', () => {
  for (const shape of [[1], [7, 3], [64, 65], [3, 1, 129]]) {
    test(`out = a + b matches the CPU twin for shape [${shape}]`, async () => {
      await gpuCase(async (ctx) => {
        const n = shape.reduce((x, y) => x * y, 1);
        const a = randomArray(n, 1),
          b = randomArray(n, 2);
        const out = upload(ctx, 'out', shape, new Float32Array(n));
        add(ctx, upload(ctx, 'a', shape, a), upload(ctx, 'b', shape, b), out);
        expectClose('add', await download(ctx, out), addRef(a, b), 0);
      });
    });
  }

  test('addInPlace accumulates into its first operand', async () => {
    await gpuCase(async (ctx) => {
      const a = randomArray(1000, 3),
        b = randomArray(1000, 4);
      const acc = upload(ctx, 'acc', [10, 100], a);
      addInPlace(ctx, acc, upload(ctx, 'b', [10, 100], b));
      addInPlace(ctx, acc, upload(ctx, 'b2', [10, 100], b));
      expectClose('addInPlace', await download(ctx, acc), addRef(addRef(a, b), b), 0);
    });
  });

  test('mismatched shapes are refused before dispatch, naming the tensor', async () => {
    await gpuCase(async (ctx) => {
      const a = upload(ctx, 'residual', [4, 8], new Float32Array(32));
      const b = upload(ctx, 'attnOut', [8, 4], new Float32Array(32));
      expect(() => add(ctx, a, b, a)).toThrow(/add: tensor "attnOut" has shape \[8, 4\] but \[4, 8\] is required/);
    });
  });
});
