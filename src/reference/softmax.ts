import type { GridDims, GridKernelSpec, ShaderSpec } from './kernel-spec.ts';

/** Options of the softmax twin; the same meaning as the kernel's SoftmaxOptions. */
export interface SoftmaxRefOptions {
  readonly scale?: number;
  readonly causal?: boolean;
  readonly rowOffset?: number;
}

/** Unmasked leading columns of local row `i` (of n per matrix): cols, or clamp(r0 + i + 1, 0, cols). */
export function softmaxRowLimit(i: number, cols: number, causal: boolean, rowOffset: number): number {
  return causal ? Math.min(cols, Math.max(0, rowOffset + i + 1)) : cols;
}

/**
 * CPU twin of softmax in float64: x [..., n, cols] given as `shape` → y of the same shape.
 * Masked columns and fully masked rows give 0.
 */
export function softmaxRef(
  x: ArrayLike<number>,
  shape: readonly number[],
  options: SoftmaxRefOptions = {},
): Float64Array {
  const { scale = 1, causal = false, rowOffset = 0 } = options;
  const cols = shape[shape.length - 1];
  const n = shape.length >= 2 ? shape[shape.length - 2] : 1;
  const rows = cols === 0 ? 0 : x.length / cols;
  const y = new Float64Array(x.length);
  for (let r = 0; r < rows; r++) {
    const lim = softmaxRowLimit(r % n, cols, causal, rowOffset);
    const base = r * cols;
    let m = -Infinity;
    for (let j = 0; j < lim; j++) m = Math.max(m, scale * x[base + j]);
    let s = 0;
    for (let j = 0; j < lim; j++) s += Math.exp(scale * x[base + j] - m);
    for (let j = 0; j < lim; j++) y[base + j] = Math.exp(scale * x[base + j] - m) / s;
  }
  return y;
}

/** CPU twin of softmaxBackward in float64: dx = scale · y ⊙ (dy − rowsum(dy ⊙ y)), rows of `cols`. */
export function softmaxBackwardRef(y: ArrayLike<number>, dy: ArrayLike<number>, cols: number, scale = 1): Float64Array {
  const dx = new Float64Array(y.length);
  for (let base = 0; base < y.length; base += cols) {
    let d = 0;
    for (let j = 0; j < cols; j++) d += dy[base + j] * y[base + j];
    for (let j = 0; j < cols; j++) dx[base + j] = scale * y[base + j] * (dy[base + j] - d);
  }
  return dx;
}

/** shaders/softmax.wgsl (with the shared row reduction): Params { rows, cols, n, causal, r0, scale } padded to 32 bytes. */
export const softmaxShader: ShaderSpec = {
  file: 'softmax',
  include: ['row-reduce'],
  params: [
    { name: 'rows', type: 'u32' },
    { name: 'cols', type: 'u32' },
    { name: 'n', type: 'u32' },
    { name: 'causal', type: 'u32' },
    { name: 'r0', type: 'i32' },
    { name: 'scale', type: 'f32' },
    { name: '_pad0', type: 'u32' },
    { name: '_pad1', type: 'u32' },
  ],
};

/** Score-matrix rows n of [..., n, cols] (1 for a single row [cols]). */
const matrixRows = ({ shape }: GridDims): number => (shape.length >= 2 ? shape[shape.length - 2] : 1);

/** y = softmax(scale · x) over the last dim, causal mask by global row (core attention's softmax). */
export const softmaxKernel: GridKernelSpec<'softmax', SoftmaxRefOptions> = {
  name: 'softmax',
  shader: softmaxShader,
  entryPoint: 'softmax',
  megatron: 'core attention softmax (DotProductAttention)',
  cost: { perElement: 8 },
  grid: 'rows',
  bindings: [
    { name: 'x', access: 'read' },
    { name: 'y', access: 'write' },
  ],
  params: (d, { scale = 1, causal = false, rowOffset = 0 }) => ({
    rows: d.rows,
    cols: d.cols,
    n: matrixRows(d),
    causal: causal ? 1 : 0,
    r0: rowOffset,
    scale,
  }),
  twin: ([x], d, options) => [softmaxRef(x, d.shape, options)],
};

/** dx = scale · y ⊙ (dy − rowsum(dy ⊙ y)). */
export const softmaxBackwardKernel: GridKernelSpec<'softmaxBackward', { readonly scale?: number }> = {
  name: 'softmaxBackward',
  shader: softmaxShader,
  entryPoint: 'softmax_backward',
  megatron: 'core attention softmax (DotProductAttention)',
  cost: { perElement: 4 },
  grid: 'rows',
  bindings: [
    { name: 'y', access: 'read' },
    { name: 'dy', access: 'read' },
    { name: 'dx', access: 'write' },
  ],
  params: (d, { scale = 1 }) => ({ rows: d.rows, cols: d.cols, n: matrixRows(d), causal: 0, r0: 0, scale }),
  twin: ([y, dy], d, { scale = 1 }) => [softmaxBackwardRef(y, dy, d.cols, scale)],
};
