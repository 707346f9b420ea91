import { describe, expect, test } from 'vitest';
import { copyCols } from '../../../src/kernels/copy-cols.ts';
import { copyColsRef } from '../../../src/reference/copy-cols.ts';
import { randomArray } from '../../../src/reference/random.ts';
import { download, expectClose, gpuCase, upload } from '../gpu-case.ts';

// A copy moves float32 values unchanged: the GPU and the twin agree bit for bit; tolerance 0.
describe('copyCols', () => {
  test.each([
    // rows, n, src [w, c0], dst [w, c0]
    [8, 4, [12, 4], [4, 0]], // slice a query block out of fused QKV
    [64, 32, [384, 96], [32, 0]],
    [5, 3, [3, 0], [10, 7]], // place a block back into a wider matrix
    [70000, 1, [2, 1], [1, 0]], // more elements than one row of workgroups
  ] as const)('rows %i × %i columns from %j into %j match the CPU twin', async (rows, n, from, to) => {
    await gpuCase(async (ctx) => {
      const src = randomArray(rows * from[0], 1);
      const before = randomArray(rows * to[0], 2);
      const dst = upload(ctx, 'dst', [rows, to[0]], before);
      copyCols(
        ctx,
        upload(ctx, 'src', [rows, from[0]], src),
        dst,
        rows,
        n,
        { w: from[0], c0: from[1] },
        { w: to[0], c0: to[1] },
      );
      const want = copyColsRef(src, before.slice(), rows, n, { w: from[0], c0: from[1] }, { w: to[0], c0: to[1] });
      expectClose('copyCols', await download(ctx, dst), want, 0);
    });
  });

  test('a block outside a tensor is refused before dispatch, naming the tensor', async () => {
    await gpuCase(async (ctx) => {
      const a = upload(ctx, 'mixedQkv', [4, 12], new Float32Array(48));
      const b = upload(ctx, 'q', [4, 4], new Float32Array(16));
      expect(() => copyCols(ctx, a, b, 4, 4, { w: 12, c0: 10 }, { w: 4, c0: 0 })).toThrow(
        'copyCols: columns [10, 14) lie outside the 12 of tensor "mixedQkv".',
      );
      expect(() => copyCols(ctx, a, b, 3, 4, { w: 12, c0: 0 }, { w: 4, c0: 0 })).toThrow(
        'copyCols: tensor "mixedQkv" has shape [4, 12], not 3 rows of 12.',
      );
    });
  });
});
