import type { KernelSpec, ShaderSpec } from '../kernel-spec.ts';
import type { MoeRouting } from './routing.ts';

// Token permutation of an MoE block (moe_utils.py permute / unpermute, core_v0.19.0): the N kept
// picks become rows grouped by expert (expert 0's first), tokens in their original order inside an
// expert — Megatron's stable argsort of routing_map.T. Indices travel as float32 integers (exact
// below 2^24), −1 marking a dropped pick.
//   permute:   xp[n, :] = scale[n] · x[rowToken[n], :]                         x [T, h] → xp [N, h]
//   unpermute: y[t, :]  = Σ_{j<k, pickRow[t,j] ≥ 0} w[t, j] · yp[pickRow[t, j], :]   yp [N, h] → y [T, h]
//   probGrad:  dw[t, j] = ⟨dy[t, :], yp[pickRow[t, j], :]⟩ (0 for a dropped pick)
// The combine is unpermute with w = the picks' probs; permute's backward is unpermute with w = 1;
// unpermute's backward is permute with scale = the permuted probs, and probGrad for w.

/** The permutation tables of a routing: which token each permuted row holds, and back. */
export interface MoePermutation {
  readonly tokens: number;
  readonly topk: number;
  /** The token of permuted row n ([N]): Megatron's sorted_indices. */
  readonly rowToken: Int32Array;
  /** The pick (t·k + j) of permuted row n ([N]). */
  readonly rowPick: Int32Array;
  /** The permuted row of pick j of token t, at t·k + j; −1 when dropped ([T, k]). */
  readonly pickRow: Int32Array;
  /** Expert e's rows are [offsets[e], offsets[e + 1]) ([E + 1]). */
  readonly offsets: Int32Array;
}

/** The permutation of a routing's kept picks: grouped by expert, original token order inside each. */
export function permutationOf(r: MoeRouting): MoePermutation {
  const { tokens: T, topk: k, experts: E } = r;
  const offsets = new Int32Array(E + 1);
  for (let e = 0; e < E; e++) offsets[e + 1] = offsets[e] + r.tokensPerExpert[e];
  const next = offsets.slice(0, E);
  const N = offsets[E];
  const rowToken = new Int32Array(N);
  const rowPick = new Int32Array(N);
  const pickRow = new Int32Array(T * k).fill(-1);
  for (let i = 0; i < T * k; i++) {
    if (r.kept[i] === 0) continue;
    const n = next[r.topIdx[i]]++;
    rowToken[n] = Math.floor(i / k);
    rowPick[n] = i;
    pickRow[i] = n;
  }
  return { tokens: T, topk: k, rowToken, rowPick, pickRow, offsets };
}

/** xp[n, :] = scale[n] · x[rowToken[n], :]: x [T, h], rowToken [N], scale [N] → xp [N, h]. */
export function permuteRef(
  x: ArrayLike<number>,
  h: number,
  rowToken: ArrayLike<number>,
  scale: ArrayLike<number>,
): Float64Array {
  const xp = new Float64Array(rowToken.length * h);
  for (let n = 0; n < rowToken.length; n++)
    for (let j = 0; j < h; j++) xp[n * h + j] = scale[n] * x[rowToken[n] * h + j];
  return xp;
}

/** y[t, :] = Σ_j w[t, j] · yp[pickRow[t, j], :] over kept picks, j ascending: yp [N, h], pickRow and w [T, k] → y [T, h]. */
export function unpermuteRef(
  yp: ArrayLike<number>,
  h: number,
  pickRow: ArrayLike<number>,
  w: ArrayLike<number>,
  k: number,
): Float64Array {
  const T = k === 0 ? 0 : pickRow.length / k;
  const y = new Float64Array(T * h);
  for (let t = 0; t < T; t++)
    for (let j = 0; j < k; j++) {
      const n = pickRow[t * k + j];
      if (n >= 0) for (let c = 0; c < h; c++) y[t * h + c] += w[t * k + j] * yp[n * h + c];
    }
  return y;
}

/** dw[t, j] = ⟨dy[t, :], yp[pickRow[t, j], :]⟩, 0 for dropped picks: dy [T, h], yp [N, h], pickRow [T, k] → dw [T, k]. */
export function combineProbGradRef(
  dy: ArrayLike<number>,
  yp: ArrayLike<number>,
  h: number,
  pickRow: ArrayLike<number>,
  k: number,
): Float64Array {
  const dw = new Float64Array(pickRow.length);
  for (let i = 0; i < pickRow.length; i++) {
    const n = pickRow[i];
    const t = Math.floor(i / k);
    if (n >= 0) for (let c = 0; c < h; c++) dw[i] += dy[t * h + c] * yp[n * h + c];
  }
  return dw;
}

/** shaders/moe-permute.wgsl: Params { rows, h, k, _pad0 } (rows: the output's rows). */
export const moePermuteShader: ShaderSpec = {
  file: 'moe-permute',
  params: [
    { name: 'rows', type: 'u32' },
    { name: 'h', type: 'u32' },
    { name: 'k', type: 'u32' },
    { name: '_pad0', type: 'u32' },
  ],
};

const megatron = 'MoE token permutation (moe_utils.py permute / unpermute)';

/** Permute: x [T, h], rowToken [N], scale [N] → xp [N, h]. */
export const moePermuteKernel: KernelSpec<'moePermute'> = {
  name: 'moePermute',
  shader: moePermuteShader,
  entryPoint: 'moe_permute',
  megatron,
  cost: { perElement: 1 },
  bindings: [
    { name: 'x', access: 'read' },
    { name: 'rowToken', access: 'read' },
    { name: 'scale', access: 'read' },
    { name: 'xp', access: 'write' },
  ],
  twin: ([x, rowToken, scale], { shapes }) => [permuteRef(x, shapes[0][1], rowToken, scale)],
};

/** Unpermute with weights (the combine): yp [N, h], pickRow [T, k], w [T, k] → y [T, h]. */
export const moeUnpermuteKernel: KernelSpec<'moeUnpermute'> = {
  name: 'moeUnpermute',
  shader: moePermuteShader,
  entryPoint: 'moe_unpermute',
  megatron,
  cost: { perElement: 2, over: 0 },
  bindings: [
    { name: 'yp', access: 'read' },
    { name: 'pickRow', access: 'read' },
    { name: 'w', access: 'read' },
    { name: 'y', access: 'write' },
  ],
  twin: ([yp, pickRow, w], { shapes }) => [unpermuteRef(yp, shapes[0][1], pickRow, w, shapes[1][1])],
};

/** The combine's weight gradient: dy [T, h], yp [N, h], pickRow [T, k] → dw [T, k]. */
export const moeCombineProbGradKernel: KernelSpec<'moeCombineProbGrad'> = {
  name: 'moeCombineProbGrad',
  shader: moePermuteShader,
  entryPoint: 'moe_combine_prob_grad',
  megatron,
  cost: { perElement: 2, over: 1 },
  bindings: [
    { name: 'dy', access: 'read' },
    { name: 'yp', access: 'read' },
    { name: 'pickRow', access: 'read' },
    { name: 'dw', access: 'write' },
  ],
  twin: ([dy, yp, pickRow], { shapes }) => [combineProbGradRef(dy, yp, shapes[0][1], pickRow, shapes[2][1])],
};
