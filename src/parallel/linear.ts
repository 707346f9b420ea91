import type { GemmProblem } from '../reference/gemm.ts';
import type { Backend, OpSpec } from './backend.ts';
import type { GemmProduct, GemmSite } from './plan-types.ts';
import { allRows, chunkLabel, type RowBlocks, type TpChunk } from './tp-overlap.ts';
import type { WeightName } from './weight-names.ts';

/**
 * A parallel linear layer as data: its label, its product (Y = X·W), the weight it uses and how Megatron splits it —
 * `column` (ColumnParallelLinear: output dim split) or `row` (RowParallelLinear: input dim split).
 * Its three GEMMs are labelled `label`, `label.dgrad` and `label.wgrad`.
 */
export interface LinearSpec {
  readonly label: string;
  /** Its output, as the plan's GEMM sites name it. */
  readonly product: GemmProduct;
  readonly weight: WeightName;
  readonly split: 'column' | 'row';
  /** The Megatron module when more precise than the split's (e.g. "ColumnParallelLinear (output_layer)"). */
  readonly megatron?: string;
}

/** What each of a linear's GEMMs computes of Y = X·W: Y (forward), dX (dgrad), dW (wgrad). */
const computes: Record<'forward' | 'dgrad' | 'wgrad', GemmSite['computes']> = {
  forward: 'C',
  dgrad: 'dA',
  wgrad: 'dB',
};

/** The OpSpec of one of a linear's three GEMMs (of chunk `chunk` under chunked TP overlap, labelled "mlp.up[2/4]"). */
function gemmOp(l: LinearSpec, role: 'forward' | 'dgrad' | 'wgrad', chunk?: TpChunk): OpSpec {
  return {
    label: chunkLabel(role === 'forward' ? l.label : `${l.label}.${role}`, chunk),
    ...(chunk && { chunk }),
    split: l.split,
    weight: l.weight,
    gemm: { product: l.product, computes: computes[role] },
    role,
    ...(l.megatron !== undefined && { megatron: l.megatron }),
  };
}

/** A dense GEMM problem with every stride explicit; batch 1 unless given. */
function problem(
  p: Partial<GemmProblem> & Pick<GemmProblem, 'M' | 'N' | 'K' | 'sAm' | 'sAk' | 'sBk' | 'sBn' | 'sCm'>,
): GemmProblem {
  return { batch: 1, offA: 0, bsA: 0, offB: 0, bsB: 0, divB: 1, offC: 0, bsC: 0, bias: false, accumulate: false, ...p };
}

/**
 * Columns [c0, c0 + n) of a weight W [k, ldw] (a block of a fused weight such as [Q | K | V]).
 * The three products of a linear layer Y = X·W over those columns, for X [m, k], Y [m, n]:
 */
export interface WeightCols {
  readonly w: number; // ldw: row width of W
  readonly c0: number;
  readonly n: number;
}

/** Forward: Y[m, n] = X[m, k]·W[:, c0:c0+n]. */
export function linearForward<T>(
  be: Backend<T>,
  l: LinearSpec,
  x: T,
  w: T,
  y: T,
  m: number,
  k: number,
  cols: WeightCols,
): void {
  linearForwardRows(be, l, x, allRows(m), w, y, allRows(m), k, cols);
}

/**
 * Forward on row blocks (a chunk under chunked TP overlap): Y[yRows, n] = X[xRows, k]·W[:, c0:c0+n],
 * block i of xRows into block i of yRows (one strided GEMM, batch = blocks; rows are independent,
 * so each output element sums the same k products in the same order as the whole GEMM).
 */
export function linearForwardRows<T>(
  be: Backend<T>,
  l: LinearSpec,
  x: T,
  xRows: RowBlocks,
  w: T,
  y: T,
  yRows: RowBlocks,
  k: number,
  cols: WeightCols,
  chunk?: TpChunk,
): void {
  be.gemm(
    gemmOp(l, 'forward', chunk),
    problem({
      M: xRows.rows,
      N: cols.n,
      K: k,
      batch: xRows.blocks,
      offA: xRows.at * k,
      bsA: xRows.stride * k,
      sAm: k,
      sAk: 1,
      offB: cols.c0,
      sBk: cols.w,
      sBn: 1,
      offC: yRows.at * cols.n,
      bsC: yRows.stride * cols.n,
      sCm: cols.n,
    }),
    x,
    w,
    y,
  );
}

/** dgrad: dX[m, k] (+)= dY[m, n]·W[:, c0:c0+n]ᵀ. */
export function linearDgrad<T>(
  be: Backend<T>,
  l: LinearSpec,
  dy: T,
  w: T,
  dx: T,
  m: number,
  k: number,
  cols: WeightCols,
  accumulate = false,
  underRegather = false,
): void {
  linearDgradRows(be, l, dy, allRows(m), w, dx, allRows(m), k, cols, accumulate, underRegather);
}

/** dgrad on row blocks (a chunk): dX[dxRows, k] (+)= dY[dyRows, n]·W[:, c0:c0+n]ᵀ, block by block. */
export function linearDgradRows<T>(
  be: Backend<T>,
  l: LinearSpec,
  dy: T,
  dyRows: RowBlocks,
  w: T,
  dx: T,
  dxRows: RowBlocks,
  k: number,
  cols: WeightCols,
  accumulate = false,
  underRegather = false,
  chunk?: TpChunk,
): void {
  be.gemm(
    { ...gemmOp(l, 'dgrad', chunk), ...(underRegather && { underAsync: true }) },
    problem({
      M: dyRows.rows,
      N: k,
      K: cols.n,
      batch: dyRows.blocks,
      offA: dyRows.at * cols.n,
      bsA: dyRows.stride * cols.n,
      sAm: cols.n,
      sAk: 1,
      offB: cols.c0,
      sBk: 1,
      sBn: cols.w,
      offC: dxRows.at * k,
      bsC: dxRows.stride * k,
      sCm: k,
      accumulate,
    }),
    dy,
    w,
    dx,
  );
}

/**
 * wgrad: dW[:, c0:c0+n] = X[m, k]ᵀ·dY[m, n] (each weight column has one owner: nothing accumulates
 * across ranks). `accumulate` adds into dW: chunked TP overlap sums the wgrad chunk by chunk, X's
 * and dY's m rows starting at rows `at.x` and `at.dy` of their tensors.
 */
export function linearWgrad<T>(
  be: Backend<T>,
  l: LinearSpec,
  x: T,
  dy: T,
  dw: T,
  m: number,
  k: number,
  cols: WeightCols,
  accumulate = false,
  chunk?: TpChunk,
  at: { readonly x: number; readonly dy: number } = { x: 0, dy: 0 },
): void {
  be.gemm(
    gemmOp(l, 'wgrad', chunk),
    problem({
      M: k,
      N: cols.n,
      K: m,
      offA: at.x * k,
      offB: at.dy * cols.n,
      sAm: 1,
      sAk: k,
      sBk: cols.n,
      sBn: 1,
      offC: cols.c0,
      sCm: cols.w,
      accumulate,
    }),
    x,
    dy,
    dw,
  );
}

export { problem as gemmProblem };
