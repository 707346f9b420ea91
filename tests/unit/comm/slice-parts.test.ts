import { describe, expect, test } from 'vitest';
import { partRuns, partShape, slicePartBounds, sliceBlock } from '../../../src/comm/slice-parts.ts';
import { around, packSlices } from '../../../src/comm/layout.ts';
import { numel } from '../../../src/core/shape.ts';

/** The elements 0, 1, 2, … of a tensor of `shape`, so a value names its own index. */
const iota = (shape: readonly number[]): Float32Array => Float32Array.from({ length: numel(shape) }, (_, i) => i);

describe('parts of a reduce-scatter or all-gather slice block', () => {
  const cases: { shape: number[]; dim: number; t: number; elems: number }[] = [
    { shape: [12, 3], dim: 0, t: 4, elems: 5 }, // A = 1: pieces of one row, the last shorter
    { shape: [3, 8], dim: 1, t: 4, elems: 1 },
    { shape: [5, 6, 2], dim: 1, t: 3, elems: 9 }, // whole rows, 5 rows in parts of 2, 2, 1
    { shape: [2, 3, 5], dim: 2, t: 5, elems: 100 }, // one part
    { shape: [7], dim: 0, t: 7, elems: 1 },
  ];
  test.each(cases)(
    '$shape along $dim, t = $t, parts of $elems: consecutive, and their runs pack the slices',
    ({ shape, dim, t, elems }) => {
      const block = sliceBlock('reduceScatter', shape, dim, t);
      const [a, d, b] = around(shape, dim);
      expect(block).toEqual({ a, m: (d / t) * b });
      const bounds = slicePartBounds(block, elems);
      // Consecutive, non-empty, covering the block, each whole rows or inside one row, none over `elems` unless a row is.
      let end = 0;
      for (const [lo, hi] of bounds) {
        expect(lo).toBe(end);
        expect(hi).toBeGreaterThan(lo);
        const { rows, width } = partShape(lo, hi, block.m);
        expect(rows * width).toBe(hi - lo);
        expect(hi - lo).toBeLessThanOrEqual(Math.max(elems, block.m));
        end = hi;
      }
      expect(end).toBe(block.a * block.m);
      // The runs of each part, read from the tensor, are its rows of every slice: against packSlices,
      // which lays slice j out as the block [j·A·M, (j + 1)·A·M).
      const x = iota(shape);
      const packed = new Float32Array(x.length);
      packSlices(x, shape, dim, t, packed);
      for (const [lo, hi] of bounds) {
        const { rows, width } = partShape(lo, hi, block.m);
        const data = partRuns(lo, hi, block.m, t).flatMap(([at, len]) => Array.from(x.subarray(at, at + len)));
        const want: number[] = [];
        for (let i = 0; i < rows; i++)
          for (let j = 0; j < t; j++) {
            const from = j * block.a * block.m + lo + i * width;
            want.push(...packed.subarray(from, from + width));
          }
        expect(data).toEqual(want);
      }
    },
  );

  test("an all-gather's block is its whole input", () => {
    expect(sliceBlock('allGather', [2, 3, 5], 1, 4)).toEqual({ a: 2, m: 15 });
  });

  test('a part across a row boundary that is not whole rows is refused with its bounds named', () => {
    expect(() => partShape(2, 5, 3)).toThrow(
      'part [2, 5) of a block with rows of 3 is neither whole rows nor inside one row.',
    );
  });
});
