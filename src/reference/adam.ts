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
