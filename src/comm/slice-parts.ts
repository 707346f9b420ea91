import type { CollectiveOp } from './collectives.ts';
import { around } from './layout.ts';

/**
 * A reduce-scatter's or all-gather's rank slices as blocks: with the full tensor (a reduce-scatter's
 * input, an all-gather's output) viewed as [A, t, M] around `dim` (A = Π shape[<dim], M = D/t · B),
 * slice j is the [A, M] block [:, j, :]. A reduce-scatter's result and an all-gather's input are
 * one such block, row-major: element q of a block is its (⌊q/M⌋, q mod M).
 */
export interface SliceBlock {
  readonly a: number;
  readonly m: number;
}

/** The block geometry of a reduce-scatter (input `shape`, dim divisible by t) or all-gather (input `shape`) along `dim` ≥ 0. */
export function sliceBlock(
  op: Extract<CollectiveOp, 'reduceScatter' | 'allGather'>,
  shape: readonly number[],
  dim: number,
  t: number,
): SliceBlock {
  const [a, d, b] = around(shape, dim);
  return { a, m: op === 'reduceScatter' ? (d / t) * b : d * b };
}

/**
 * Cuts a block's element range [0, A·M) into parts of about `elems` elements each (at least 1):
 * whole rows when a row fits (⌊elems / M⌋ rows a part, the last part fewer), else pieces of one
 * row (`elems` columns, the row's last piece shorter). Each part [lo, hi) is then, in every
 * slice, either whole rows or a piece of one row, so it covers one contiguous run per slice.
 */
export function slicePartBounds({ a, m }: SliceBlock, elems: number): [number, number][] {
  const per = Math.max(1, Math.floor(elems));
  const out: [number, number][] = [];
  if (per >= m) {
    const rows = Math.floor(per / m);
    for (let row = 0; row < a; row += rows) out.push([row * m, Math.min(a, row + rows) * m]);
  } else
    for (let row = 0; row < a; row++)
      for (let col = 0; col < m; col += per) out.push([row * m + col, row * m + Math.min(m, col + per)]);
  return out;
}

/** Rows × width of part [lo, hi) of a block with rows of `m`: whole rows, or a piece of one row. */
export function partShape(lo: number, hi: number, m: number): { rows: number; width: number } {
  if (lo % m === 0 && (hi - lo) % m === 0) return { rows: (hi - lo) / m, width: m };
  if (Math.floor(lo / m) !== Math.floor((hi - 1) / m))
    throw new Error(`part [${lo}, ${hi}) of a block with rows of ${m} is neither whole rows nor inside one row.`);
  return { rows: 1, width: hi - lo };
}

/**
 * The runs [at, length] of the full [A, t, M] tensor that part [lo, hi) covers in all t slices,
 * in [rows, t, width] order: concatenated they are the part's rows of every slice, row by row
 * (one run for whole rows, whose t slices lie side by side; t runs for a piece of one row).
 */
export function partRuns(lo: number, hi: number, m: number, t: number): [number, number][] {
  const { rows, width } = partShape(lo, hi, m);
  const row = Math.floor(lo / m);
  if (width === m) return [[row * t * m, rows * t * m]];
  return Array.from({ length: t }, (_, j): [number, number] => [row * t * m + j * m + (lo % m), width]);
}
