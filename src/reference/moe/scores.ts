import type { GridKernelSpec, ShaderSpec } from '../kernel-spec.ts';
import { sigmoid } from '../swiglu.ts';

// The router's sigmoid scores (Megatron-Core core_v0.19.0 moe_utils.py
// topk_routing_with_score_function, score_function "sigmoid"), rows of [T, n]:
//   scores s = σ(l) elementwise (what the top-k ranks, routing.ts);
//   probs of the k picks' values v (k > 1): p_j = v_j / (Σ_i v_i + 1e-20).
// The same row normalisation, over all E experts, gives the aux loss's sigmoid scores (losses.ts).

/** Rows of `cols` divided by their sum + 1e-20. */
export function normalizedRows(v: ArrayLike<number>, cols: number): Float64Array {
  const out = new Float64Array(v.length);
  for (let base = 0; base < v.length; base += cols) {
    let d = 1e-20;
    for (let e = 0; e < cols; e++) d += v[base + e];
    for (let e = 0; e < cols; e++) out[base + e] = v[base + e] / d;
  }
  return out;
}

/** shaders/moe-score.wgsl (with the shared row reduction and sigmoid): Params { rows, cols } padded to 16 bytes. */
export const moeScoreShader: ShaderSpec = {
  file: 'moe-score',
  include: ['row-reduce', 'sigmoid'],
  params: [
    { name: 'rows', type: 'u32' },
    { name: 'cols', type: 'u32' },
    { name: '_pad0', type: 'u32' },
    { name: '_pad1', type: 'u32' },
  ],
};

const megatron = 'TopKRouter sigmoid scores (moe_utils.py topk_routing_with_score_function)';

/** s = σ(l): logits [T, E] → scores [T, E]. */
export const moeSigmoidKernel: GridKernelSpec<'moeSigmoid'> = {
  name: 'moeSigmoid',
  shader: moeScoreShader,
  entryPoint: 'moe_sigmoid',
  megatron,
  cost: { perElement: 4 },
  grid: 'rows',
  bindings: [
    { name: 'logits', access: 'read' },
    { name: 'scores', access: 'write' },
  ],
  params: (d) => ({ rows: d.rows, cols: d.cols }),
  twin: ([logits]) => [Float64Array.from(logits, sigmoid)],
};

/** p = v / (Σ_row v + 1e-20): the picks' values [T, k] → their probs [T, k]. */
export const moeNormalizeRowsKernel: GridKernelSpec<'moeNormalizeRows'> = {
  name: 'moeNormalizeRows',
  shader: moeScoreShader,
  entryPoint: 'moe_normalize_rows',
  megatron,
  cost: { perElement: 2 },
  grid: 'rows',
  bindings: [
    { name: 'v', access: 'read' },
    { name: 'p', access: 'write' },
  ],
  params: (d) => ({ rows: d.rows, cols: d.cols }),
  twin: ([v], d) => [normalizedRows(v, d.cols)],
};
