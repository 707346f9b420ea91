import { copyColsKernel } from '../reference/copy-cols.ts';
import { opSpec, type Backend, type OpSpec } from './backend.ts';
import type { LocalDims } from './dims.ts';
import type { LayerComm } from './layer-comm.ts';
import { linearDgrad, linearForward, linearWgrad, type LinearSpec, type WeightCols } from './linear.ts';
import { allGatherLastDimFromTensorParallelRegion } from './mappings.ts';
import type { GatheredQkv } from './qkv-layout.ts';

/** linear_qkv, a ColumnParallelLinear; with groups ≥ t its Q, K and V column blocks run as three GEMMs. */
export const qkvQ: LinearSpec = {
  label: 'qkv.q',
  product: 'q',
  weight: 'wqkv',
  split: 'column',
  megatron: 'ColumnParallelLinear (linear_qkv)',
};
export const qkvK: LinearSpec = { ...qkvQ, label: 'qkv.k', product: 'k' };
export const qkvV: LinearSpec = { ...qkvQ, label: 'qkv.v', product: 'v' };
/** linear_qkv as one GEMM over the rank's even slice of the interleaved columns (groups < t). */
export const qkvFused: LinearSpec = { ...qkvQ, label: 'qkv', product: 'qkv' };

/** Megatron's steps 2–4 of get_query_key_value_tensors: taking this rank's q heads, k and v out of the gathered QKV. */
const splitModule = 'get_query_key_value_tensors (this rank’s q heads, k, v of the gathered QKV)';

/** This rank's Q [s, b, nq, d], K and V [s, b, nkv, d] before RoPE, as linear_qkv produced them. */
export interface QkvRaw<T> {
  readonly q: T;
  readonly k: T;
  readonly v: T;
}

/** What the QKV backward leaves for the caller: the partial dX [s, b, h] and the wgrad to run. */
export interface QkvGrads<T> {
  readonly dx: T;
  wgrad(x: T): void;
}

const qCols = (D: LocalDims): WeightCols => ({ w: D.qkvWidth, c0: 0, n: D.nq * D.d });
const kCols = (D: LocalDims): WeightCols => ({ w: D.qkvWidth, c0: D.nq * D.d, n: D.nkv * D.d });
const vCols = (D: LocalDims): WeightCols => ({ w: D.qkvWidth, c0: (D.nq + D.nkv) * D.d, n: D.nkv * D.d });
const sliceCols = (D: LocalDims): WeightCols => ({ w: D.qkvWidth, c0: 0, n: D.qkvWidth });

/** The three column pieces of the gathered [m, W] this rank's attention reads, with their local widths. */
const pieces = (D: LocalDims, g: GatheredQkv) =>
  [
    { name: 'q', c0: g.q.c0, n: D.nq * D.d },
    { name: 'k', c0: g.k.c0, n: D.d },
    { name: 'v', c0: g.v.c0, n: D.d },
  ] as const;

const splitOp = (what: string, backward: boolean): OpSpec =>
  opSpec(`qkv.split.${what}${backward ? '.backward' : ''}`, 'heads', { megatron: splitModule });

/**
 * Forward of linear_qkv on this rank, x [s, b, h] (full sequence):
 * groups ≥ t (`gathered` undefined): the rank holds whole groups, [Q | K | V] = x·W_r, three GEMMs;
 * groups < t: qkv = x·W_r [s, b, W/t] (the rank's even slice of the interleaved columns), then
 * all_gather_last_dim_from_tensor_parallel_region → [s, b, W], then this rank's q heads, its group's
 * k and v are copied out (Megatron-Core, attention.py get_query_key_value_tensors).
 */
export async function qkvForward<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  D: LocalDims,
  gathered: GatheredQkv | undefined,
  x: T,
  wqkv: T,
): Promise<QkvRaw<T>> {
  const { s, b, h, d, nq, nkv } = D;
  const m = s * b;
  const q = be.tensor('q.raw', [s, b, nq, d]);
  const k = be.tensor('k.raw', [s, b, nkv, d]);
  const v = be.tensor('v', [s, b, nkv, d]);
  if (!gathered) {
    linearForward(be, qkvQ, x, wqkv, q, m, h, qCols(D));
    linearForward(be, qkvK, x, wqkv, k, m, h, kCols(D));
    linearForward(be, qkvV, x, wqkv, v, m, h, vCols(D));
    return { q, k, v };
  }
  const slice = be.tensor('qkv', [s, b, D.qkvWidth]);
  linearForward(be, qkvFused, x, wqkv, slice, m, h, sliceCols(D));
  const full = await lc.forward(opSpec('qkv.gather', 'column'), allGatherLastDimFromTensorParallelRegion, slice);
  if (full !== slice) be.release(slice);
  const out = { q, k, v };
  for (const p of pieces(D, gathered))
    be.kernel(splitOp(p.name, false), copyColsKernel, [full, out[p.name]], {
      rows: m,
      n: p.n,
      from: { w: D.qkvFull, c0: p.c0 },
      to: { w: p.n, c0: 0 },
    });
  be.release(full);
  return out;
}

/**
 * Backward of linear_qkv: dq, dk, dv are the gradients of the raw Q, K, V (released here).
 * groups ≥ t: dX = Σ dY_i·W_iᵀ over the three blocks; groups < t: the pieces are placed into a
 * zero [s, b, W] (the gradient of the gathered QKV, non-zero only where this rank read), which the
 * gather's backward reduce-scatters along the last dim to [s, b, W/t]; then one dgrad GEMM.
 * `beforeDgrad` (under SP) runs right before the dgrad GEMMs (the caller issues the re-gather of
 * the input there); `wgrad(x)` writes dW_r = xᵀ·dY_r — every column has one owner, no sum over ranks.
 */
export async function qkvBackward<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  D: LocalDims,
  gathered: GatheredQkv | undefined,
  grads: QkvRaw<T>,
  wqkv: T,
  dwqkv: T,
  beforeDgrad?: () => void,
): Promise<QkvGrads<T>> {
  const { s, b, h } = D;
  const m = s * b;
  const under = beforeDgrad !== undefined;
  if (!gathered) {
    const dx = be.tensor('d.attn.in', [s, b, h]);
    beforeDgrad?.();
    linearDgrad(be, qkvQ, grads.q, wqkv, dx, m, h, qCols(D), false, under);
    linearDgrad(be, qkvK, grads.k, wqkv, dx, m, h, kCols(D), true, under);
    linearDgrad(be, qkvV, grads.v, wqkv, dx, m, h, vCols(D), true, under);
    const wgrad = (x: T): void => {
      linearWgrad(be, qkvQ, x, grads.q, dwqkv, m, h, qCols(D));
      linearWgrad(be, qkvK, x, grads.k, dwqkv, m, h, kCols(D));
      linearWgrad(be, qkvV, x, grads.v, dwqkv, m, h, vCols(D));
      for (const t of [grads.q, grads.k, grads.v]) be.release(t);
    };
    return { dx, wgrad };
  }
  const dFull = be.tensor('d.qkv.gathered', [s, b, D.qkvFull]);
  for (const p of pieces(D, gathered))
    be.kernel(splitOp(p.name, true), copyColsKernel, [grads[p.name], dFull], {
      rows: m,
      n: p.n,
      from: { w: p.n, c0: 0 },
      to: { w: D.qkvFull, c0: p.c0 },
    });
  for (const t of [grads.q, grads.k, grads.v]) be.release(t);
  const dSlice = await lc.backward(
    opSpec('qkv.gather.backward', 'column'),
    allGatherLastDimFromTensorParallelRegion,
    dFull,
  );
  if (dSlice !== dFull) be.release(dFull);
  const dx = be.tensor('d.attn.in', [s, b, h]);
  beforeDgrad?.();
  linearDgrad(be, qkvFused, dSlice, wqkv, dx, m, h, sliceCols(D), false, under);
  const wgrad = (x: T): void => {
    linearWgrad(be, qkvFused, x, dSlice, dwqkv, m, h, sliceCols(D));
    be.release(dSlice);
  };
  return { dx, wgrad };
}
