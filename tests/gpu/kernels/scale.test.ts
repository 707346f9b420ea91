import { describe, test } from 'vitest';
import { scale } from '../../../src/kernels/scale.ts';
import { randomArray } from '../../../src/reference/random.ts';
import { scaleRef } from '../../../src/reference/scale.ts';
import { download, expectClose, gpuCase, upload } from '../gpu-case.ts';

// One float32 product per element: the GPU and the twin round the same exact product, so they
// agree bit for bit; tolerance 0.
describe('scale', () => {
  for (const [shape, factor] of [
    [[1], 0.5],
    [[7, 3], 0.25],
    [[64, 65], 1 / 3],
  ] as const) {
    test(`x ← ${factor.toPrecision(3)}·x matches the CPU twin for shape [${shape}]`, async () => {
      await gpuCase(async (ctx) => {
        const n = shape.reduce((a: number, b: number) => a * b, 1);
        const x = randomArray(n, 5);
        const t = upload(ctx, 'x', shape, x);
        scale(ctx, t, factor);
        expectClose('scale', await download(ctx, t), scaleRef(x, factor), 0);
      });
    });
  }
});
