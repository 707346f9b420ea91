import type { ShaderSpec } from './kernel-spec.ts';

/** Adam's hyper-parameters (Kingma & Ba 2015; PyTorch's torch.optim.Adam defaults but lr). */
export interface AdamHyper {
  readonly lr: number;
  readonly beta1: number;
  readonly beta2: number;
  readonly eps: number;
}

/** β1 = 0.9, β2 = 0.999, ε = 1e-8 (the paper's and PyTorch's defaults) with the given learning rate. */
export function adamHyper(lr: number): AdamHyper {
  return { lr, beta1: 0.9, beta2: 0.999, eps: 1e-8 };
}

/** Adam's bias corrections at step k ≥ 1: c1 = 1 − β1^k, c2 = 1 − β2^k. */
export function adamCorrections(h: AdamHyper, k: number): { c1: number; c2: number } {
  if (!Number.isInteger(k) || k < 1) throw new Error(`adam: the step must be a whole number ≥ 1, got ${k}.`);
  return { c1: 1 - h.beta1 ** k, c2: 1 - h.beta2 ** k };
}

/**
 * CPU twin of adamStep in float64, in place on p, m, v (equal lengths) for gradient g at step k:
 * m ← β1·m + (1−β1)·g; v ← β2·v + (1−β2)·g²; p ← p − lr·(m/c1)/(√(v/c2) + ε).
 */
export function adamRef(
  p: Float64Array,
  g: ArrayLike<number>,
  m: Float64Array,
  v: Float64Array,
  h: AdamHyper,
  k: number,
): void {
  const { c1, c2 } = adamCorrections(h, k);
  for (let i = 0; i < p.length; i++) {
    m[i] = h.beta1 * m[i] + (1 - h.beta1) * g[i];
    v[i] = h.beta2 * v[i] + (1 - h.beta2) * g[i] * g[i];
    p[i] -= (h.lr * (m[i] / c1)) / (Math.sqrt(v[i] / c2) + h.eps);
  }
}

/** shaders/adam.wgsl: Params { n, lr, beta1, beta2, eps, c1, c2 } padded to 32 bytes. */
export const adamShader: ShaderSpec = {
  file: 'adam',
  params: [
    { name: 'n', type: 'u32' },
    { name: 'lr', type: 'f32' },
    { name: 'beta1', type: 'f32' },
    { name: 'beta2', type: 'f32' },
    { name: 'eps', type: 'f32' },
    { name: 'c1', type: 'f32' },
    { name: 'c2', type: 'f32' },
    { name: '_pad', type: 'u32' },
  ],
};

/**
 * How far K Adam steps (k = 1…K, from zero moments) may move apart when every gradient they see
 * differs by at most deltas[k−1] from `grads[k−1]` (per element): a bound on |Σ_k Δu_k|, u_k the
 * update lr multiplies. Per element, m̂_k = Σ_j a_kj·g_j and v̂_k = Σ_j b_kj·g_j² are convex
 * combinations (a_kj = (1−β1)β1^(k−j)/c1, b_kj = (1−β2)β2^(k−j)/c2), so |Δm̂_k| ≤ δ and, to first
 * order, |Δ√v̂_k| ≤ max_j|g_j|·δ/√v̂_k; with |m̂_k| ≤ max_j|g_j| = ρ_k·√v̂_k:
 *   |Δu_k| ≤ δ_k·(1 + ρ_k²)/(√v̂_k + ε),
 * taken twice for the second-order terms. Whatever the gradients, |u_k| ≤ max_j|g_j|/√v̂_k ≤
 * 1/√(min_j b_kj), so |Δu_k| never exceeds twice that (a sign flipped where g ≈ 0); the bound
 * takes the smaller. δ_k for step k bounds every earlier step's gradient error too (deltas are
 * taken as the running maximum).
 */
export function adamDriftBound(
  grads: readonly ArrayLike<number>[],
  deltas: readonly number[],
  h: AdamHyper,
): Float64Array {
  if (grads.length !== deltas.length)
    throw new Error(`adamDriftBound: ${grads.length} gradients but ${deltas.length} deltas.`);
  const n = grads[0]?.length ?? 0;
  const out = new Float64Array(n);
  let delta = 0;
  for (let k = 1; k <= grads.length; k++) {
    delta = Math.max(delta, deltas[k - 1]);
    const { c2 } = adamCorrections(h, k);
    const b = (j: number) => ((1 - h.beta2) * h.beta2 ** (k - j)) / c2;
    const cap = 2 / Math.sqrt(Math.min(...Array.from({ length: k }, (_, j) => b(j + 1))));
    for (let i = 0; i < n; i++) {
      let v = 0,
        gmax = 0;
      for (let j = 1; j <= k; j++) {
        const g = grads[j - 1][i];
        v += b(j) * g * g;
        gmax = Math.max(gmax, Math.abs(g));
      }
      const s = Math.sqrt(v);
      const rho2 = v > 0 ? (gmax * gmax) / v : Infinity;
      const first = v > 0 ? (2 * delta * (1 + rho2)) / (s + h.eps) : Infinity;
      out[i] += Math.min(cap, first);
    }
  }
  return out;
}
