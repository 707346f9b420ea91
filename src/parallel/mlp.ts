import type { Backend } from './backend.ts';
import type { LocalDims } from './dims.ts';
import { linearDgrad, linearForward, linearWgrad, type WeightCols } from './linear.ts';

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

const gateCols = (D: LocalDims): WeightCols => ({ w: 2 * D.f, c0: 0, n: D.f });
const upCols = (D: LocalDims): WeightCols => ({ w: 2 * D.f, c0: D.f, n: D.f });

/** Forward: x [s, b, h] (full sequence) → partial [s, b, h]. */
export function mlpForward<T>(be: Backend<T>, D: LocalDims, x: T, wfc1: T, wdown: T): { out: T; saved: MlpSaved<T> } {
  const { s, b, h, f } = D;
  const m = s * b;
  const gate = be.tensor('mlp.gate', [s, b, f]);
  const up = be.tensor('mlp.up', [s, b, f]);
  linearForward(be, 'mlp.gate', x, wfc1, gate, m, h, gateCols(D));
  linearForward(be, 'mlp.up', x, wfc1, up, m, h, upCols(D));
  const act = be.tensor('mlp.act', [s, b, f]);
  be.swiglu('mlp.swiglu', gate, up, act);
  const out = be.tensor('mlp.out', [s, b, h]);
  linearForward(be, 'mlp.down', act, wdown, out, m, f, { w: h, c0: 0, n: h });
  return { out, saved: { gate, up, act } };
}

/**
 * Backward: dOut [s, b, h] (full) → this rank's partial dX [s, b, h] and dwdown; `wgrad()` then
 * adds gate and up's wgrads into dwfc1. Split so that, as in Megatron, the reduction of dX can
 * start before (and overlap) the last wgrad GEMMs. `x` is the MLP input (re-gathered under SP).
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
): { dx: T; wgrad: (x: T) => void } {
  const { s, b, h, f } = D;
  const m = s * b;
  const dact = be.tensor('d.mlp.act', [s, b, f]);
  linearDgrad(be, 'mlp.down.dgrad', dOut, wdown, dact, m, f, { w: h, c0: 0, n: h });
  linearWgrad(be, 'mlp.down.wgrad', saved.act, dOut, dwdown, m, f, { w: h, c0: 0, n: h });
  const dgate = be.tensor('d.mlp.gate', [s, b, f]);
  const dup = be.tensor('d.mlp.up', [s, b, f]);
  be.swigluBackward('mlp.swiglu.backward', saved.gate, saved.up, dact, dgate, dup);
  be.release(dact);
  const dx = be.tensor('d.mlp.in', [s, b, h]);
  linearDgrad(be, 'mlp.gate.dgrad', dgate, wfc1, dx, m, h, gateCols(D));
  linearDgrad(be, 'mlp.up.dgrad', dup, wfc1, dx, m, h, upCols(D), true);
  const wgrad = (x: T): void => {
    linearWgrad(be, 'mlp.gate.wgrad', x, dgate, dwfc1, m, h, gateCols(D));
    linearWgrad(be, 'mlp.up.wgrad', x, dup, dwfc1, m, h, upCols(D));
    be.release(dgate);
    be.release(dup);
  };
  return { dx, wgrad };
}
