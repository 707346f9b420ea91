import type { GemmProblem } from '../reference/gemm.ts';

/** Width in texels of a staging texture: an operand is one run of texels, row after row of it. */
export const stagedWidth = 2048;

/** The staged kernel's k-step: the staged k extent (Kp) is a multiple of it. */
export const stagedKStep = 8;

/**
 * What a staged GEMM (gemm_staged32, gemm-pack.wgsl) puts in its two textures, in rgba32float
 * texels (4 floats each), each operand one run of texels in row-major order: A as [batch, M, Kp/4]
 * texels of A_z(m, k); B as [⌈batch/divB⌉, Kp, ⌈N/4⌉] texels of B(k, n). Kp is K rounded up to the
 * kernel's 8-wide k-step; the padding is staged as zeros, so the k loop has no tail.
 */
export interface GemmStaging {
  readonly Kp: number;
  /** Texels of each operand. */
  readonly a: number;
  readonly b: number;
}

export function gemmStaging(p: GemmProblem): GemmStaging {
  const Kp = Math.ceil(p.K / stagedKStep) * stagedKStep;
  return {
    Kp,
    a: p.batch * p.M * (Kp / 4),
    b: Math.ceil(p.batch / p.divB) * Kp * Math.ceil(p.N / 4),
  };
}

/** Texture rows (of stagedWidth texels) that `texels` need; at least one, so that a texture exists when K = 0. */
export function stagedRows(texels: number): number {
  return Math.max(1, Math.ceil(texels / stagedWidth));
}

/**
 * Why `s` does not fit a texture within `maxTextureDimension2D` (which operand, how many rows), or
 * undefined when it does. A problem that does not fit runs the staged variant's fallback instead.
 */
export function stagingRefusal(s: GemmStaging, limits: { readonly maxTextureDimension2D: number }): string | undefined {
  for (const [name, texels] of [
    ['A', s.a],
    ['B', s.b],
  ] as const) {
    const rows = stagedRows(texels);
    if (rows > limits.maxTextureDimension2D)
      return `staged ${name} would need ${rows} rows of ${stagedWidth} texels, beyond maxTextureDimension2D ${limits.maxTextureDimension2D}`;
  }
  return undefined;
}

/** Bytes of the two staged textures (16 per texel, whole rows): scratch a staged GEMM holds besides its operands. */
export function stagingBytes(s: GemmStaging): number {
  return 16 * stagedWidth * (stagedRows(s.a) + stagedRows(s.b));
}
