import type { GemmProblem } from '../reference/gemm.ts';

/** Texel extents (width, height, layers) of one staged operand. */
export type StagedSize = readonly [number, number, number];

/**
 * The textures a staged GEMM (gemm_staged32) reads, in rgba32float texels (4 floats each):
 * At holds A_z(m, k) for every batch z: Kp/4 texels wide, M tall, `batch` layers; Bt holds B(k, n)
 * for every distinct B: ⌈N/4⌉ wide, Kp tall, ⌈batch/divB⌉ layers. Kp is K rounded up to the
 * kernel's 8-wide k-step; the padding is staged as zeros, so the k loop has no tail.
 */
export interface GemmStaging {
  readonly Kp: number;
  readonly a: StagedSize;
  readonly b: StagedSize;
}

/** Kernel's k-step: the textures' k extent is a multiple of it. */
export const stagedKStep = 8;

export function gemmStaging(p: GemmProblem): GemmStaging {
  const Kp = Math.ceil(p.K / stagedKStep) * stagedKStep;
  // A texture needs every extent ≥ 1: K = 0 stages one zero texel per row (the loop then never runs).
  const one = (n: number) => Math.max(1, n);
  return {
    Kp,
    a: [one(Kp / 4), p.M, p.batch],
    b: [Math.ceil(p.N / 4), one(Kp), Math.ceil(p.batch / p.divB)],
  };
}

/** The texture limits staging depends on (a GPUSupportedLimits has them). */
export interface TextureLimits {
  readonly maxTextureDimension2D: number;
  readonly maxTextureArrayLayers: number;
}

/**
 * Why `s` does not fit textures within `limits` (which extent, of which operand, against which
 * limit), or undefined when it does. A problem that does not fit runs the staged variant's
 * fallback instead.
 */
export function stagingRefusal(s: GemmStaging, limits: TextureLimits): string | undefined {
  for (const [name, [w, h, layers]] of [
    ['A', s.a],
    ['B', s.b],
  ] as const) {
    if (w > limits.maxTextureDimension2D || h > limits.maxTextureDimension2D)
      return `staged ${name} would be ${w} × ${h} texels, beyond maxTextureDimension2D ${limits.maxTextureDimension2D}`;
    if (layers > limits.maxTextureArrayLayers)
      return `staged ${name} would have ${layers} layers, beyond maxTextureArrayLayers ${limits.maxTextureArrayLayers}`;
  }
  return undefined;
}

/** Bytes of the two staged textures (16 per texel): scratch a staged GEMM holds besides its operands. */
export function stagingBytes(s: GemmStaging): number {
  const texels = ([w, h, l]: StagedSize) => w * h * l;
  return 16 * (texels(s.a) + texels(s.b));
}
