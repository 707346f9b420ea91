import type { KernelSpec, ShaderSpec } from './kernel-spec.ts';

/** A column block of a row-major matrix: width w (its last dim) and the block's first column c0. */
export interface ColumnBlock {
  readonly w: number;
  readonly c0: number;
}

/** CPU twin of copy_cols: dst[r, dst.c0 + j] = src[r, src.c0 + j] for r < rows, j < n (in place; exact). */
export function copyColsRef<A extends { [i: number]: number; readonly length: number }>(
  src: ArrayLike<number>,
  dst: A,
  rows: number,
  n: number,
  from: ColumnBlock,
  to: ColumnBlock,
): A {
  for (let r = 0; r < rows; r++) for (let j = 0; j < n; j++) dst[r * to.w + to.c0 + j] = src[r * from.w + from.c0 + j];
  return dst;
}

/** shaders/copy-cols.wgsl: Params { n, cols, sw, sc0, dw, dc0 } padded to 32 bytes. */
export const copyColsShader: ShaderSpec = {
  file: 'copy-cols',
  params: [
    { name: 'n', type: 'u32' },
    { name: 'cols', type: 'u32' },
    { name: 'sw', type: 'u32' },
    { name: 'sc0', type: 'u32' },
    { name: 'dw', type: 'u32' },
    { name: 'dc0', type: 'u32' },
    { name: '_pad0', type: 'u32' },
    { name: '_pad1', type: 'u32' },
  ],
};

/** copyCols' arguments: `rows` rows of `n` columns, from block `from` of the source to block `to` of the destination. */
export interface CopyColsArgs {
  readonly rows: number;
  readonly n: number;
  readonly from: ColumnBlock;
  readonly to: ColumnBlock;
}

/** A column block copied between [rows, w] matrices: no arithmetic (the plan records the block [rows, n] as its output). */
export const copyColsKernel: KernelSpec<'copyCols', CopyColsArgs> = {
  name: 'copyCols',
  shader: copyColsShader,
  entryPoint: 'copy_cols',
  megatron: 'tensor copy',
  cost: { perElement: 0 },
  bindings: [
    { name: 'src', access: 'read' },
    { name: 'dst', access: 'read_write' },
  ],
  twin: ([src, dst], _d, { rows, n, from, to }) => [copyColsRef(src, Float64Array.from(dst), rows, n, from, to)],
  planned: { reads: [0], outShape: (_d, { rows, n }) => [rows, n] },
};
