import type { KernelSpec, ShaderSpec } from '../kernel-spec.ts';

// Top-k with one stated tie rule. torch.topk leaves the order of equal values unspecified; here
// "a ranks above b" is v_a > v_b, or v_a = v_b and a's index is lower. So among equal scores the
// lower expert index is chosen first (and, for capacity, the earlier token). The j-th pick is the
// highest-ranked element ranked below pick j − 1: k passes over the row, no mask, the same
// procedure in the twin and in shaders/moe-topk.wgsl, so both choose the same indices from the
// same float32 values. Values must be finite (NaN has no rank).

/** Whether (va, a) ranks above (vb, b): larger value, or equal value and lower index. */
export const ranksAbove = (va: number, a: number, vb: number, b: number): boolean => va > vb || (va === vb && a < b);

/**
 * Indices of the k highest of values[off + i·stride], i < n, highest first, ties to the lower i
 * (the rule above). k ≤ n.
 */
export function topkIndices(values: ArrayLike<number>, n: number, k: number, off = 0, stride = 1): number[] {
  const picks: number[] = [];
  let lastV = Infinity;
  let last = -1;
  for (let j = 0; j < k; j++) {
    let best = -1;
    let bestV = -Infinity;
    for (let i = 0; i < n; i++) {
      const v = values[off + i * stride];
      if (j > 0 && !ranksAbove(lastV, last, v, i)) continue; // already picked, or ranked above a pick
      if (best < 0 || ranksAbove(v, i, bestV, best)) {
        best = i;
        bestV = v;
      }
    }
    picks.push(best);
    lastV = bestV;
    last = best;
  }
  return picks;
}

/**
 * Row-wise top-k of scores [rows, n]: indices [rows, k] (as numbers) and their values [rows, k],
 * each row highest first, ties to the lower column.
 */
export function topkRowsRef(
  scores: ArrayLike<number>,
  rows: number,
  n: number,
  k: number,
): { indices: Float64Array; values: Float64Array } {
  const indices = new Float64Array(rows * k);
  const values = new Float64Array(rows * k);
  for (let r = 0; r < rows; r++) {
    const picks = topkIndices(scores, n, k, r * n);
    picks.forEach((c, j) => {
      indices[r * k + j] = c;
      values[r * k + j] = scores[r * n + c];
    });
  }
  return { indices, values };
}

/** shaders/moe-topk.wgsl: Params { rows, n, k } padded to 16 bytes. */
export const moeTopkShader: ShaderSpec = {
  file: 'moe-topk',
  params: [
    { name: 'rows', type: 'u32' },
    { name: 'n', type: 'u32' },
    { name: 'k', type: 'u32' },
    { name: '_pad0', type: 'u32' },
  ],
};

/** moeTopk's argument: k, the picks per row (1 ≤ k ≤ the row length). */
export interface MoeTopkArgs {
  readonly k: number;
}

/** Router top-k: scores [rows, E] → indices [rows, k] (float32 integers), values [rows, k]. */
export const moeTopkKernel: KernelSpec<'moeTopk', MoeTopkArgs> = {
  name: 'moeTopk',
  shader: moeTopkShader,
  entryPoint: 'moe_topk',
  megatron: 'TopKRouter (topk_routing_with_score_function)',
  // One compare per score and pick; counted once per score (the plan's estimate, k not known to it).
  cost: { perElement: 1, over: 0 },
  bindings: [
    { name: 'scores', access: 'read' },
    { name: 'indices', access: 'write' },
    { name: 'values', access: 'write' },
  ],
  twin: ([scores], { shapes }, { k }) => {
    const [rows, n] = shapes[0];
    const { indices, values } = topkRowsRef(scores, rows, n, k);
    return [indices, values];
  },
};
