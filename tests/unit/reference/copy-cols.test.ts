import { expect, test } from 'vitest';
import { copyColsRef } from '../../../src/reference/copy-cols.ts';

test('copyColsRef copies a column block into another matrix and leaves the rest', () => {
  // src [2, 4] = [[0 1 2 3], [4 5 6 7]]; columns [1, 3) into dst [2, 3] at column 1.
  const src = [0, 1, 2, 3, 4, 5, 6, 7];
  const dst = new Float64Array(6).fill(-1);
  copyColsRef(src, dst, 2, 2, { w: 4, c0: 1 }, { w: 3, c0: 1 });
  expect([...dst]).toEqual([-1, 1, 2, -1, 5, 6]);
});
