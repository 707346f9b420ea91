import { opSpec, type Backend } from './backend.ts';
import type { LocalDims } from './dims.ts';
import { linearDgrad, linearForward, linearWgrad, type LinearSpec, type WeightCols } from './linear.ts';
import { swigluBackwardKernel, swigluKernel } from '../reference/swiglu.ts';

/** The MLP's linears: gate and up are the two halves of linear_fc1, down is linear_fc2. */
export const mlpGate: LinearSpec = {
  label: 'mlp.gate',
  product: 'gate',
  weight: 'wfc1',
  split: 'column',
  megatron: 'ColumnParallelLinear (linear_fc1)',
};
export const mlpUp: LinearSpec = { ...mlpGate, label: 'mlp.up', product: 'up' };
export const mlpDown: LinearSpec = {
  label: 'mlp.down',
  product: 'down',
  weight: 'wdown',
  split: 'row',
  megatron: 'RowParallelLinear (linear_fc2)',
};

/**
 * SwiGLU MLP on one rank: gate and up are ColumnParallelLinear (columns [r·f, (r+1)·f) of each,
 * f = ffn/t, stored side by side in wfc1 [h, 2f]), the activation silu(G) ⊙ U is local (no
 * communication: each rank holds whole columns), and down [f, h] is a RowParallelLinear whose
 * [s, b, h] output is a partial sum (the caller reduces it).
 */
export interface MlpSaved<T> {
  readonly gate: T;
  readonly up: T;
  readonly act: T;
}

/** Columns of linear_fc1 [h, 2f] that gate and up use. */
export const gateCols = (D: LocalDims): WeightCols => ({ w: 2 * D.f, c0: 0, n: D.f });
/** See gateCols. */
export const upCols = (D: LocalDims): WeightCols => ({ w: 2 * D.f, c0: D.f, n: D.f });

/** Forward: x [s, b, h] (full sequence) → partial [s, b, h]. */
export function mlpForward<T>(be: Backend<T>, D: LocalDims, x: T, wfc1: T, wdown: T): { out: T; saved: MlpSaved<T> } {
  const { s, b, h, f } = D;
  const m = s * b;
  const gate = be.tensor('mlp.gate', [s, b, f]);
  const up = be.tensor('mlp.up', [s, b, f]);
  linearForward(be, mlpGate, x, wfc1, gate, m, h, gateCols(D));
  linearForward(be, mlpUp, x, wfc1, up, m, h, upCols(D));
  const act = be.tensor('mlp.act', [s, b, f]);
  be.kernel(opSpec('mlp.swiglu', 'column'), swigluKernel, [gate, up, act], {});
  const out = be.tensor('mlp.out', [s, b, h]);
  linearForward(be, mlpDown, act, wdown, out, m, f, { w: h, c0: 0, n: h });
  return { out, saved: { gate, up, act } };
}

/**
 * Backward: dOut [s, b, h] (full) → this rank's partial dX [s, b, h] and dwdown; `wgrad()` then
 * adds gate and up's wgrads into dwfc1. Split so that, as in Megatron, the reduction of dX can
 * start before (and overlap) the last wgrad GEMMs. `x` is the MLP input (re-gathered under SP).
 * `beforeDgrad` (under SP) is called right before gate and up's dgrad GEMMs: the caller issues
 * the re-gather of the MLP input there, as Megatron does, and those GEMMs run under it.
 */
export function mlpBackward<T>(
  be: Backend<T>,
  D: LocalDims,
  dOut: T,
  saved: MlpSaved<T>,
  wfc1: T,
  wdown: T,
  dwfc1: T,
  dwdown: T,
  beforeDgrad?: () => void,
): { dx: T; wgrad: (x: T) => void } {
  const { s, b, h, f } = D;
  const m = s * b;
  const dact = be.tensor('d.mlp.act', [s, b, f]);
  linearDgrad(be, mlpDown, dOut, wdown, dact, m, f, { w: h, c0: 0, n: h });
  linearWgrad(be, mlpDown, saved.act, dOut, dwdown, m, f, { w: h, c0: 0, n: h });
  const dgate = be.tensor('d.mlp.gate', [s, b, f]);
  const dup = be.tensor('d.mlp.up', [s, b, f]);
  be.kernel(
    opSpec('mlp.swiglu.backward', 'column'),
    swigluBackwardKernel,
    [saved.gate, saved.up, dact, dgate, dup],
    {},
  );
  be.release(dact);
  const dx = be.tensor('d.mlp.in', [s, b, h]);
  beforeDgrad?.();
  const under = beforeDgrad !== undefined;
  linearDgrad(be, mlpGate, dgate, wfc1, dx, m, h, gateCols(D), false, under);
  linearDgrad(be, mlpUp, dup, wfc1, dx, m, h, upCols(D), true, under);
  const wgrad = (x: T): void => {
    linearWgrad(be, mlpGate, x, dgate, dwfc1, m, h, gateCols(D));
    linearWgrad(be, mlpUp, x, dup, dwfc1, m, h, upCols(D));
    be.release(dgate);
    be.release(dup);
  };
  return { dx, wgrad };
}
