import { copyColsKernel, type ColumnBlock } from '../reference/copy-cols.ts';
import { uniformThen, type KernelContext } from './context.ts';
import { grid1d } from './grid.ts';
import { formatShape, numel } from '../core/shape.ts';
import { kernelPipeline, kernelUniform } from './dispatch-kernel.ts';
import type { GpuTensor } from './tensor.ts';

/**
 * dst[r, to.c0 + j] = src[r, from.c0 + j] for r < rows, j < n: a column block of src [rows, from.w]
 * copied into dst [rows, to.w] (the rest of dst untouched). Shapes are read as [rows, w] over
 * their numel; blocks must lie inside both.
 */
export function copyCols(
  ctx: KernelContext,
  src: GpuTensor,
  dst: GpuTensor,
  rows: number,
  n: number,
  from: ColumnBlock,
  to: ColumnBlock,
): void {
  const op = 'copyCols';
  for (const [t, b] of [
    [src, from],
    [dst, to],
  ] as const) {
    if (numel(t.shape) !== rows * b.w)
      throw new Error(`${op}: tensor "${t.name}" has shape ${formatShape(t.shape)}, not ${rows} rows of ${b.w}.`);
    if (!(Number.isInteger(b.c0) && b.c0 >= 0 && b.c0 + n <= b.w))
      throw new Error(`${op}: columns [${b.c0}, ${b.c0 + n}) lie outside the ${b.w} of tensor "${t.name}".`);
  }
  const count = rows * n;
  if (count === 0) return;
  const params = kernelUniform(ctx, copyColsKernel, {
    n: count,
    cols: n,
    sw: from.w,
    sc0: from.c0,
    dw: to.w,
    dc0: to.c0,
  });
  const wg = grid1d(ctx.device.limits, op, src.name, src.shape, count);
  ctx.dispatch(op, kernelPipeline(ctx, copyColsKernel), uniformThen(params, [src.buffer, dst.buffer]), wg);
}
