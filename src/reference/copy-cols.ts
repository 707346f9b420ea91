/** A column block of a row-major matrix: width w (its last dim) and the block's first column c0. */
export interface ColumnBlock {
  readonly w: number;
  readonly c0: number;
}

/** CPU twin of copy_cols: dst[r, dst.c0 + j] = src[r, src.c0 + j] for r < rows, j < n (in place; exact). */
export function copyColsRef<A extends { [i: number]: number; readonly length: number }>(
  src: ArrayLike<number>,
  dst: A,
  rows: number,
  n: number,
  from: ColumnBlock,
  to: ColumnBlock,
): A {
  for (let r = 0; r < rows; r++) for (let j = 0; j < n; j++) dst[r * to.w + to.c0 + j] = src[r * from.w + from.c0 + j];
  return dst;
}
