import type { GridDims, GridKernelSpec, KernelSpec, ShaderSpec } from './kernel-spec.ts';

/** CPU twin of rmsnorm in float64: x rows of h, gain g [h] → y (same length) and rstd (one per row). */
export function rmsnormRef(
  x: ArrayLike<number>,
  g: ArrayLike<number>,
  h: number,
  eps = 1e-5,
): { y: Float64Array; rstd: Float64Array } {
  const rows = h === 0 ? 0 : x.length / h;
  const y = new Float64Array(x.length);
  const rstd = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let ss = 0;
    for (let j = 0; j < h; j++) ss += x[r * h + j] ** 2;
    rstd[r] = 1 / Math.sqrt(ss / h + eps);
    for (let j = 0; j < h; j++) y[r * h + j] = x[r * h + j] * rstd[r] * g[j];
  }
  return { y, rstd };
}

/**
 * CPU twin of the rmsnorm backward in float64: dx (same length as x) and dg [h], dg summed over
 * all rows given (pass a slice of rows for a block's partial).
 */
export function rmsnormBackwardRef(
  x: ArrayLike<number>,
  g: ArrayLike<number>,
  dy: ArrayLike<number>,
  h: number,
  eps = 1e-5,
): { dx: Float64Array; dg: Float64Array } {
  return rmsnormBackwardGivenRstd(x, g, rmsnormRef(x, g, h, eps).rstd, dy, h);
}

/**
 * The rmsnorm backward from a saved rstd (one per row), as the kernel computes it:
 * dx = rstd·dy⊙g − x·rstd³·Σ(dy⊙g⊙x)/h per row, dg[j] = Σ_rows dy·x·rstd.
 */
export function rmsnormBackwardGivenRstd(
  x: ArrayLike<number>,
  g: ArrayLike<number>,
  rstd: ArrayLike<number>,
  dy: ArrayLike<number>,
  h: number,
): { dx: Float64Array; dg: Float64Array } {
  const dx = new Float64Array(x.length);
  const dg = new Float64Array(h);
  for (let r = 0; r < rstd.length; r++) {
    const base = r * h,
      q = rstd[r];
    let d = 0;
    for (let j = 0; j < h; j++) d += dy[base + j] * g[j] * x[base + j];
    for (let j = 0; j < h; j++) {
      dx[base + j] = q * dy[base + j] * g[j] - (x[base + j] * q ** 3 * d) / h;
      dg[j] += dy[base + j] * x[base + j] * q;
    }
  }
  return { dx, dg };
}

/** shaders/rmsnorm.wgsl (with the shared row reduction): Params { rows, h, eps, row_start, row_end, accumulate } padded to 32 bytes. */
export const rmsnormShader: ShaderSpec = {
  file: 'rmsnorm',
  include: ['row-reduce'],
  params: [
    { name: 'rows', type: 'u32' },
    { name: 'h', type: 'u32' },
    { name: 'eps', type: 'f32' },
    { name: 'row_start', type: 'u32' },
    { name: 'row_end', type: 'u32' },
    { name: 'accumulate', type: 'u32' },
    { name: '_pad0', type: 'u32' },
    { name: '_pad1', type: 'u32' },
  ],
};

/** x [..., h] (binding 0) gives the gain's shape [h] and rstd's [...]. */
const gainOrRow =
  (gain: number, perRow: number) =>
  (k: number, d: GridDims): readonly number[] =>
    k === gain ? [d.cols] : k === perRow ? d.shape.slice(0, -1) : d.shape;

const megatron = 'RMSNorm';

/** y = x / rms(x) · g over the last dim, rstd = 1/rms(x) saved per row. */
export const rmsnormKernel: GridKernelSpec<'rmsnorm', { readonly eps: number }> = {
  name: 'rmsnorm',
  shader: rmsnormShader,
  entryPoint: 'rmsnorm',
  megatron,
  cost: { perElement: 4 },
  grid: 'rows',
  bindings: [
    { name: 'x', access: 'read' },
    { name: 'g', access: 'read' },
    { name: 'y', access: 'write' },
    { name: 'rstd', access: 'write' },
  ],
  shapeOf: gainOrRow(1, 3),
  params: (d, { eps }) => ({ rows: d.rows, h: d.cols, eps, row_start: 0, row_end: 0, accumulate: 0 }),
  twin: ([x, g], d, { eps }) => {
    const { y, rstd } = rmsnormRef(x, g, d.cols, eps);
    return [y, rstd];
  },
};

/**
 * ε of the forward. The twins of the backward and the weight gradient recompute rstd from x and ε
 * in float64 rather than read the saved (float32) rstd, so a float64 layer's gradients are exact to
 * float64 rounding (the finite-difference checks rely on it); the GPU reads the saved rstd.
 */
export interface RmsnormArgs {
  readonly eps: number;
}

/** dx of rmsnorm from the saved rstd (dg is rmsnormWeightGrad). */
export const rmsnormBackwardKernel: GridKernelSpec<'rmsnormBackward', RmsnormArgs> = {
  name: 'rmsnormBackward',
  shader: rmsnormShader,
  entryPoint: 'rmsnorm_backward',
  megatron,
  cost: { perElement: 8 },
  grid: 'rows',
  bindings: [
    { name: 'x', access: 'read' },
    { name: 'g', access: 'read' },
    { name: 'rstd', access: 'read' },
    { name: 'dy', access: 'read' },
    { name: 'dx', access: 'write' },
  ],
  shapeOf: gainOrRow(1, 2),
  params: (d) => ({ rows: d.rows, h: d.cols, eps: 0, row_start: 0, row_end: 0, accumulate: 0 }),
  twin: ([x, g, , dy], d, { eps }) => [rmsnormBackwardRef(x, g, dy, d.cols, eps).dx],
  planned: { reads: [0, 1, 3] },
};

/** Which rows rmsnormWeightGrad sums, and whether it adds to dg instead of overwriting it. */
export interface RmsnormWeightGradArgs extends RmsnormArgs {
  /** First row (token) of the block; default 0. */
  readonly rowStart?: number;
  /** One past the last row of the block; default all rows. */
  readonly rowEnd?: number;
  /** dg += the block's sum (default false: dg = the block's sum). */
  readonly accumulate?: boolean;
}

/**
 * dg [h] (+)= Σ over rows [rowStart, rowEnd) of dy · x · rstd: one invocation per column (its own
 * grid, src/kernels/rmsnorm.ts). dg does not depend on the gain: the twin passes ones.
 */
export const rmsnormWeightGradKernel: KernelSpec<'rmsnormWeightGrad', RmsnormWeightGradArgs> = {
  name: 'rmsnormWeightGrad',
  shader: rmsnormShader,
  entryPoint: 'rmsnorm_dg',
  megatron,
  cost: { perElement: 3, over: 0 },
  role: 'wgrad',
  bindings: [
    { name: 'x', access: 'read' },
    { name: 'rstd', access: 'read' },
    { name: 'dy', access: 'read' },
    { name: 'dg', access: 'read_write' },
  ],
  twin: ([x, , dy, dg], d, { eps, rowStart = 0, rowEnd = d.rows, accumulate = false }) => {
    const h = d.cols;
    const block = (a: ArrayLike<number>) =>
      Float64Array.from({ length: (rowEnd - rowStart) * h }, (_, i) => a[rowStart * h + i]);
    const sum = rmsnormBackwardRef(block(x), new Float64Array(h).fill(1), block(dy), h, eps).dg;
    return [accumulate ? sum.map((v, j) => v + dg[j]) : sum];
  },
  planned: { reads: [0, 2] },
};
