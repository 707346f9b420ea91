import { describe, expect, test, vi } from 'vitest';
import { embedding, embeddingBackward } from '../../../src/kernels/embedding.ts';
import { numel } from '../../../src/core/shape.ts';
import { float32Tolerance } from '../../../src/reference/compare.ts';
import { embeddingBackwardRef, embeddingRef } from '../../../src/reference/embedding.ts';
import { randomArray, rng } from '../../../src/reference/random.ts';
import { download, expectClose, gpuCase, upload } from '../gpu-case.ts';

// Tolerances. The forward copies float32 values or writes 0: exact (0). The backward sums, per
// (v, j), the dy[t, j] (|dy| ≤ 1) of at most `tokens` tokens in float32, plus the previous value
// (|prev| ≤ 1) when accumulating: float32Tolerance(tokens + 1) against the float64 twin.
const dwTol = (tokens: number): number => float32Tolerance(tokens + 1);

/** `tokens` float32 ids uniform over [0, hi): repeats are likely when tokens ≳ hi. */
function idsFor(tokens: number, hi: number, seed: number): Float32Array {
  const next = rng(seed);
  return Float32Array.from({ length: tokens }, () => Math.floor(next() * hi));
}

describe('vocab-parallel embedding', () => {
  // [ids shape, vLocal, h, vocabStart]; ids span [0, vocabStart + vLocal + 9), so some fall below
  // and some above this rank's range.
  const cases: [number[], number, number, number][] = [
    [[1], 1, 1, 0],
    [[5, 3], 67, 9, 20],
    [[4, 2], 3, 130, 7],
    [[200], 70, 5, 0],
  ];
  for (const [idShape, vl, h, v0] of cases) {
    test(`forward and backward match the CPU twin for ids [${idShape}] on a [${vl}, ${h}] table from vocab id ${v0}`, async () => {
      await gpuCase(async (ctx) => {
        const tokens = numel(idShape);
        const ids = idsFor(tokens, v0 + vl + 9, 90 + vl);
        const table = randomArray(vl * h, 91 + vl),
          dy = randomArray(tokens * h, 92 + vl),
          prev = randomArray(vl * h, 93 + vl);
        const idT = upload(ctx, 'ids', idShape, ids);
        const out = upload(ctx, 'out', [...idShape, h], new Float32Array(tokens * h).fill(7)); // stale values must be overwritten
        embedding(ctx, idT, upload(ctx, 'table', [vl, h], table), out, { vocabStart: v0 });
        expectClose('out', await download(ctx, out), embeddingRef(ids, table, h, v0), 0);

        const dyT = upload(ctx, 'dy', [...idShape, h], dy);
        const fresh = upload(ctx, 'dtable', [vl, h], prev.slice()); // overwritten: accumulate defaults to false
        const summed = upload(ctx, 'dtableAcc', [vl, h], prev.slice());
        embeddingBackward(ctx, idT, dyT, fresh, { vocabStart: v0 });
        embeddingBackward(ctx, idT, dyT, summed, { vocabStart: v0, accumulate: true });
        expectClose('dtable', await download(ctx, fresh), embeddingBackwardRef(ids, dy, vl, h, v0), dwTol(tokens));
        expectClose(
          'dtable accumulated',
          await download(ctx, summed),
          embeddingBackwardRef(ids, dy, vl, h, v0, prev),
          dwTol(tokens),
        );
      });
    });
  }

  test('ids outside the range, negative, fractional or non-finite look up zeros and get no gradient', async () => {
    await gpuCase(async (ctx) => {
      const vl = 4,
        h = 2,
        v0 = 3;
      // Local ids [3, 7): 3, 6 and 4 twice. Out of range: 2, 7, −1, 4.5, NaN, ±Inf, 2^24 and −0 (id 0).
      const ids = Float32Array.from([2, 3, 7, -1, 4.5, NaN, Infinity, -Infinity, 2 ** 24, 6, -0, 4, 4]);
      const table = Float32Array.from({ length: vl * h }, (_, i) => i + 1);
      const dy = Float32Array.from({ length: ids.length * h }, (_, i) => i + 1);
      const idT = upload(ctx, 'ids', [ids.length], ids);
      const out = upload(ctx, 'out', [ids.length, h], new Float32Array(ids.length * h).fill(-5));
      const dtable = upload(ctx, 'dtable', [vl, h], new Float32Array(vl * h));
      embedding(ctx, idT, upload(ctx, 'table', [vl, h], table), out, { vocabStart: v0 });
      embeddingBackward(ctx, idT, upload(ctx, 'dy', [ids.length, h], dy), dtable, { vocabStart: v0 });
      const z = [0, 0];
      expect(Array.from(await download(ctx, out))).toEqual(
        [z, [1, 2], z, z, z, z, z, z, z, [7, 8], z, [3, 4], [3, 4]].flat(),
      );
      // Row 0 (id 3) gets token 1's dy, row 1 (id 4) tokens 11 and 12, row 3 (id 6) token 9; id 5 none.
      expect(Array.from(await download(ctx, dtable))).toEqual([3, 4, 23 + 25, 24 + 26, 0, 0, 19, 20]);
      const zeroIds = upload(ctx, 'zeroIds', [2], Float32Array.from([-0, -1]));
      const zeroOut = upload(ctx, 'zeroOut', [2, h], new Float32Array(2 * h).fill(-5));
      embedding(ctx, zeroIds, upload(ctx, 'table', [vl, h], table), zeroOut); // −0 is id 0 when vocabStart = 0
      expect(Array.from(await download(ctx, zeroOut))).toEqual([1, 2, 0, 0]);
    });
  });

  test('a table of more than 65535 workgroups of rows folds its backward grid and still covers the last row', async () => {
    await gpuCase(async (ctx) => {
      const vl = 66000,
        h = 64; // vl · h / 64 lanes = 66000 workgroups > 65535: the grid folds into y
      const ids = Float32Array.from([vl - 1, 0, 40000, vl - 1]),
        dy = randomArray(4 * h, 97),
        table = randomArray(vl * h, 98);
      const idT = upload(ctx, 'ids', [4], ids),
        out = upload(ctx, 'out', [4, h], new Float32Array(4 * h));
      const dtable = upload(ctx, 'dtable', [vl, h], new Float32Array(vl * h).fill(7));
      embedding(ctx, idT, upload(ctx, 'table', [vl, h], table), out);
      embeddingBackward(ctx, idT, upload(ctx, 'dy', [4, h], dy), dtable);
      expectClose('out', await download(ctx, out), embeddingRef(ids, table, h), 0);
      expectClose('dtable', await download(ctx, dtable), embeddingBackwardRef(ids, dy, vl, h), dwTol(4));
    });
  });

  test('the forward of three GPU vocab shards, summed like the all-reduce, equals the unsharded lookup', async () => {
    await gpuCase(async (ctx) => {
      const tokens = 12,
        vocab = 23,
        h = 6;
      const ids = idsFor(tokens, vocab + 2, 95),
        table = randomArray(vocab * h, 96);
      const idT = upload(ctx, 'ids', [tokens], ids);
      const sum = new Float32Array(tokens * h);
      for (const [v0, v1] of [
        [0, 8],
        [8, 16],
        [16, 23],
      ]) {
        const out = upload(ctx, `out from ${v0}`, [tokens, h], new Float32Array(tokens * h));
        embedding(ctx, idT, upload(ctx, `table from ${v0}`, [v1 - v0, h], table.slice(v0 * h, v1 * h)), out, {
          vocabStart: v0,
        });
        (await download(ctx, out)).forEach((v, i) => (sum[i] += v));
      }
      expectClose('summed shards', sum, embeddingRef(ids, table, h), 0); // one owner per id, others add 0
    });
  });

  test('mismatched shapes and a bad vocabStart are refused before dispatch, naming the tensor', async () => {
    await gpuCase(async (ctx) => {
      const ids = upload(ctx, 'ids', [4, 2], new Float32Array(8));
      const table = upload(ctx, 'table', [10, 8], new Float32Array(80));
      const flat = upload(ctx, 'flatTable', [80], new Float32Array(80));
      const out = upload(ctx, 'out', [4, 2, 7], new Float32Array(56));
      const dy = upload(ctx, 'dy', [8, 8], new Float32Array(64));
      const good = upload(ctx, 'good', [4, 2, 8], new Float32Array(64));
      const dispatch = vi.spyOn(ctx, 'dispatch');
      expect(() => embedding(ctx, ids, table, out)).toThrow(
        /embedding: tensor "out" has shape \[4, 2, 7\] but \[4, 2, 8\] is required \(one row of "table" per id of "ids"\)/,
      );
      expect(() => embedding(ctx, ids, flat, good)).toThrow(
        /embedding: tensor "flatTable" has shape \[80\]; the embedding table must be \[vLocal, h\]/,
      );
      expect(() => embedding(ctx, ids, table, good, { vocabStart: 2 ** 24 - 9 })).toThrow(
        /embedding: option "vocabStart" is 16777207; it must be an integer in \[0, 16777206\]/,
      );
      expect(() => embeddingBackward(ctx, ids, dy, table)).toThrow(
        /embeddingBackward: tensor "dy" has shape \[8, 8\] but \[4, 2, 8\] is required/,
      );
      expect(() => embeddingBackward(ctx, ids, good, flat)).toThrow(
        /embeddingBackward: tensor "flatTable" has shape \[80\]; the embedding table must be \[vLocal, h\]/,
      );
      expect(() => embeddingBackward(ctx, ids, good, table, { vocabStart: 1.5 })).toThrow(
        /embeddingBackward: option "vocabStart" is 1.5/,
      );
      expect(dispatch).not.toHaveBeenCalled();
      embedding(ctx, ids, table, good); // the same call with matching shapes does dispatch
      expect(dispatch).toHaveBeenCalledTimes(1);
    });
  });
});
