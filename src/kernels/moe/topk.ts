import { moeTopkKernel } from '../../reference/moe/topk.ts';
import { uniformThen, type KernelContext } from '../context.ts';
import { kernelPipeline, kernelUniform } from '../dispatch-kernel.ts';
import { grid1d } from '../grid.ts';
import { expectShape } from '../limits.ts';
import { checkInteger } from '../rowwise.ts';
import type { GpuTensor } from '../tensor.ts';

/**
 * The router's top-k per row, ties to the lower column (src/reference/moe/topk.ts): scores
 * [rows, n] → indices [rows, k] (float32 integers), values [rows, k], each row highest first.
 */
export function moeTopk(ctx: KernelContext, scores: GpuTensor, indices: GpuTensor, values: GpuTensor, k: number): void {
  const op = 'moeTopk';
  if (scores.shape.length !== 2)
    throw new Error(
      `${op}: tensor "${scores.name}" has shape [${scores.shape.join(', ')}]; the scores must be [rows, n].`,
    );
  const [rows, n] = scores.shape;
  checkInteger(op, 'k', k, 1, Math.max(1, n));
  for (const t of [indices, values])
    expectShape(op, t.name, t.shape, [rows, k], `k = ${k} picks per row of "${scores.name}"`);
  if (rows === 0) return;
  const wg = grid1d(ctx.device.limits, op, scores.name, scores.shape, rows);
  ctx.dispatch(
    op,
    kernelPipeline(ctx, moeTopkKernel),
    uniformThen(kernelUniform(ctx, moeTopkKernel, { rows, n, k }), [scores.buffer, indices.buffer, values.buffer]),
    wg,
  );
}
