import type { GridDims, GridKernelSpec, ShaderSpec } from '../kernel-spec.ts';
import { softmaxRef } from '../softmax.ts';
import { sigmoid } from '../swiglu.ts';
import type { MoeConfig, MoeScoreFunction } from './config.ts';

// The router's two auxiliary losses row by row, logits l [T, E] (formulas and Megatron sources in
// losses.ts; Megatron-Core core_v0.19.0 moe_utils.py z_loss_func, switch_load_balancing_loss_func):
//   z-loss:  z_t = a · lse_t²,  lse_t = log Σ_e exp(l[t, e]);  ∂z_t/∂l[t, e] = 2a · lse_t · softmax(l_t)_e
//            with a = coeff_z / T_g (the mean over the group's T_g tokens).
//   aux:     u_e = exp(l_e − max l) or softmax(l)_e (softmax) or σ(l_e) (sigmoid), D = Σ_e u_e (+ 1e-20 for sigmoid),
//            S_e = u_e / D;  aux_t = b · Σ_e c_e · S_e  with b = coeff · E / (k · T_g²) and c_e the
//            group's per-expert counts (no gradient);
//            ∂aux_t/∂S_e = b·c_e, so with g_e = (b·c_e − aux_t) / D:
//            softmax: ∂aux_t/∂l_e = S_e · (b·c_e − aux_t) = u_e · g_e
//            sigmoid: ∂aux_t/∂l_e = (b·c_e/D − b·Σ_i c_i σ_i/D²) · σ_e(1 − σ_e) = g_e · u_e (1 − u_e)
// Summing the rows gives the rank's share of each loss (losses.ts auxLoss, zLoss).

/** A loss per row [T] and its gradient with respect to the logits [T, E]. */
export interface RowLoss {
  readonly rows: Float64Array;
  readonly dLogits: Float64Array;
}

/** z_t = a · lse_t² and its logits gradient, for logits [T, E] given as rows of E. */
export function zLossRows(logits: ArrayLike<number>, E: number, a: number): RowLoss {
  const T = E === 0 ? 0 : logits.length / E;
  const rows = new Float64Array(T);
  const dLogits = new Float64Array(T * E);
  for (let t = 0; t < T; t++) {
    const base = t * E;
    let m = -Infinity;
    for (let e = 0; e < E; e++) m = Math.max(m, logits[base + e]);
    let s = 0;
    for (let e = 0; e < E; e++) s += Math.exp(logits[base + e] - m);
    const lse = m + Math.log(s);
    rows[t] = a * lse * lse;
    for (let e = 0; e < E; e++) dLogits[base + e] = (2 * a * lse * Math.exp(logits[base + e] - m)) / s;
  }
  return { rows, dLogits };
}

/** aux_t = b · Σ_e c_e · S[t, e] and its logits gradient, for logits [T, E] given as rows of E and counts c [E]. */
export function auxLossRows(
  logits: ArrayLike<number>,
  E: number,
  counts: ArrayLike<number>,
  b: number,
  score: MoeScoreFunction,
): RowLoss {
  const u = score === 'sigmoid' ? Float64Array.from(logits, sigmoid) : softmaxRef(logits, [logits.length / E, E]);
  return auxLossRowsOf(u, E, counts, b, score);
}

/**
 * auxLossRows from the scores' numerators u [T, E]: the softmax probabilities (D = Σ_e u_e, 1 up
 * to rounding) or σ(l) (D = Σ_e u_e + 1e-20).
 */
export function auxLossRowsOf(
  u: ArrayLike<number>,
  E: number,
  counts: ArrayLike<number>,
  b: number,
  score: MoeScoreFunction,
): RowLoss {
  const T = E === 0 ? 0 : u.length / E;
  const rows = new Float64Array(T);
  const dLogits = new Float64Array(T * E);
  for (let t = 0; t < T; t++) {
    const base = t * E;
    let D = score === 'sigmoid' ? 1e-20 : 0;
    let cu = 0;
    for (let e = 0; e < E; e++) {
      D += u[base + e];
      cu += counts[e] * u[base + e];
    }
    const loss = (b * cu) / D;
    rows[t] = loss;
    for (let e = 0; e < E; e++) {
      const g = (b * counts[e] - loss) / D;
      const v = u[base + e];
      dLogits[base + e] = score === 'sigmoid' ? g * v * (1 - v) : g * v;
    }
  }
  return { rows, dLogits };
}

/** The z-loss kernel's argument: a = coeff_z / T_g. */
export interface MoeZLossArgs {
  readonly a: number;
}

/** The aux-loss kernel's arguments: b = coeff · E / (k · T_g²) and the router's score function. */
export interface MoeAuxLossArgs {
  readonly b: number;
  readonly score: MoeScoreFunction;
}

/** The z-loss kernel's arguments for `c` over a group of `tokens` tokens; null when the z-loss is off. */
export function zLossArgs(c: MoeConfig, tokens: number): MoeZLossArgs | null {
  const coeff = c.moeZLossCoeff;
  return coeff === null || tokens === 0 ? null : { a: coeff / tokens };
}

/** The aux-loss kernel's arguments for `c` over a group of `tokens` tokens; null when its coefficient is 0 (Megatron skips it). */
export function auxLossArgs(c: MoeConfig, tokens: number): MoeAuxLossArgs | null {
  const coeff = c.moeAuxLossCoeff;
  if (coeff === 0 || tokens === 0) return null;
  return { b: (coeff * c.numMoeExperts) / (c.moeRouterTopk * tokens * tokens), score: c.moeRouterScoreFunction };
}

/** shaders/moe-router-loss.wgsl (with the shared row reduction and sigmoid): Params { rows, cols, scale, sigmoid }. */
export const moeRouterLossShader: ShaderSpec = {
  file: 'moe-router-loss',
  include: ['row-reduce', 'sigmoid'],
  params: [
    { name: 'rows', type: 'u32' },
    { name: 'cols', type: 'u32' },
    { name: 'scale', type: 'f32' },
    { name: 'sigmoid', type: 'u32' },
  ],
};

/** Logits [T, E] (binding 0) give the counts' shape [E] (binding `counts`) and the loss rows' [T] (binding `perRow`). */
const countsOrRows =
  (counts: number | null, perRow: number) =>
  (k: number, d: GridDims): readonly number[] =>
    k === counts ? [d.cols] : k === perRow ? d.shape.slice(0, -1) : d.shape;

/** z-loss rows and d logits: logits [T, E] → z [T], dLogits [T, E]. */
export const moeZLossKernel: GridKernelSpec<'moeZLoss', MoeZLossArgs> = {
  name: 'moeZLoss',
  shader: moeRouterLossShader,
  entryPoint: 'moe_z_loss',
  megatron: 'router z-loss (moe_utils.py z_loss_func)',
  cost: { perElement: 8, over: 0 },
  grid: 'rows',
  bindings: [
    { name: 'logits', access: 'read' },
    { name: 'z', access: 'write' },
    { name: 'dLogits', access: 'write' },
  ],
  shapeOf: countsOrRows(null, 1),
  params: (d, { a }) => ({ rows: d.rows, cols: d.cols, scale: a, sigmoid: 0 }),
  twin: ([logits], d, { a }) => {
    const { rows, dLogits } = zLossRows(logits, d.cols, a);
    return [rows, dLogits];
  },
};

/** Load-balancing loss rows and d logits: logits [T, E], counts [E] → aux [T], dLogits [T, E]. */
export const moeAuxLossKernel: GridKernelSpec<'moeAuxLoss', MoeAuxLossArgs> = {
  name: 'moeAuxLoss',
  shader: moeRouterLossShader,
  entryPoint: 'moe_aux_loss',
  megatron: 'load-balancing loss (moe_utils.py switch_load_balancing_loss_func)',
  cost: { perElement: 10, over: 0 },
  grid: 'rows',
  bindings: [
    { name: 'logits', access: 'read' },
    { name: 'counts', access: 'read' },
    { name: 'aux', access: 'write' },
    { name: 'dLogits', access: 'write' },
  ],
  shapeOf: countsOrRows(1, 2),
  params: (d, { b, score }) => ({ rows: d.rows, cols: d.cols, scale: b, sigmoid: score === 'sigmoid' ? 1 : 0 }),
  twin: ([logits, counts], d, { b, score }) => {
    const { rows, dLogits } = auxLossRows(logits, d.cols, counts, b, score);
    return [rows, dLogits];
  },
};
