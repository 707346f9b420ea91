import type { GemmProblem } from './gemm.ts';

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
 * Most floats staged per float of an operand: padding K to Kp and N to a multiple of 4 may at most
 * double an operand, so that a rank's staging scratch stays within twice its largest GEMM operand
 * (what the memory budget counts, src/accounting/budget.ts). Problems with K < 4 or N < 4 (launch-bound
 * anyway) run the fallback.
 */
export const maxStagingInflation = 2;

/**
 * Why `p`, staged as `s`, is not staged (which operand: inflated past maxStagingInflation, or more
 * rows than maxTextureDimension2D), or undefined when it is. Such a problem runs the staged
 * variant's fallback instead.
 */
export function stagingRefusal(
  p: GemmProblem,
  s: GemmStaging,
  limits: { readonly maxTextureDimension2D: number },
): string | undefined {
  for (const [name, texels, floats] of [
    ['A', s.a, p.batch * p.M * p.K],
    ['B', s.b, Math.ceil(p.batch / p.divB) * p.K * p.N],
  ] as const) {
    if (4 * texels > maxStagingInflation * floats)
      return `staged ${name} would hold ${4 * texels} floats for its ${floats} (K = ${p.K} padded to ${s.Kp}, N = ${p.N} to ${4 * Math.ceil(p.N / 4)}), more than ${maxStagingInflation}×`;
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

/**
 * Where an operand's staged texels are its buffer's bytes verbatim, so staging is a copy, not a
 * pack pass: the float offset of its first element (a multiple of 4: a texel is 16 bytes), or
 * undefined. A is so when it is row-major and dense across batches (sAk = 1, sAm = K, bsA = M·K
 * or one batch) with K a multiple of the k-step (Kp = K); B when row-major and dense (sBn = 1,
 * sBk = N, bsB = K·N or one distinct B) with N a multiple of 4 and Kp = K.
 */
export function stagedCopyOffset(p: GemmProblem, operand: 'A' | 'B'): number | undefined {
  if (p.K % stagedKStep !== 0) return undefined;
  const dense =
    operand === 'A'
      ? p.sAk === 1 && p.sAm === p.K && (p.batch === 1 || p.bsA === p.M * p.K)
      : p.N % 4 === 0 && p.sBn === 1 && p.sBk === p.N && (Math.ceil(p.batch / p.divB) === 1 || p.bsB === p.K * p.N);
  const off = operand === 'A' ? p.offA : p.offB;
  return dense && off % 4 === 0 ? off : undefined;
}
