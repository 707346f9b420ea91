import { numel } from '../../core/shape.ts';
import { moeCombineProbGradKernel, moePermuteKernel, moeUnpermuteKernel } from '../../reference/moe/permute.ts';
import { uniformThen, type KernelContext } from '../context.ts';
import { kernelPipeline, kernelUniform } from '../dispatch-kernel.ts';
import { grid1d } from '../grid.ts';
import { expectShape } from '../limits.ts';
import type { GpuTensor } from '../tensor.ts';

// The MoE block's token permutation on the GPU (src/reference/moe/permute.ts has the formulas and
// twins). Index tables are float32 integers built on the host from the routing (permutationOf):
// rowToken [N] (the token of each permuted row), pickRow [T, k] (each pick's row, −1 if dropped).

/** [rows, h] of a 2-D tensor, or an error naming it. */
function rowsCols(op: string, t: GpuTensor, what: string): [number, number] {
  if (t.shape.length !== 2)
    throw new Error(`${op}: tensor "${t.name}" has shape [${t.shape.join(', ')}]; ${what} must be 2-D.`);
  return [t.shape[0], t.shape[1]];
}

/** xp[n, :] = scale[n] · x[rowToken[n], :]: x [T, h], rowToken [N], scale [N] → xp [N, h]. */
export function moePermute(
  ctx: KernelContext,
  x: GpuTensor,
  rowToken: GpuTensor,
  scale: GpuTensor,
  xp: GpuTensor,
): void {
  const op = 'moePermute';
  const [, h] = rowsCols(op, x, 'the tokens [T, h]');
  const N = numel(rowToken.shape);
  expectShape(op, rowToken.name, rowToken.shape, [N], 'one token index per permuted row');
  expectShape(op, scale.name, scale.shape, [N], `one scale per row of "${rowToken.name}"`);
  expectShape(op, xp.name, xp.shape, [N, h], `one row of "${x.name}" per entry of "${rowToken.name}"`);
  if (N * h === 0) return;
  const wg = grid1d(ctx.device.limits, op, xp.name, xp.shape, N * h);
  ctx.dispatch(
    op,
    kernelPipeline(ctx, moePermuteKernel),
    uniformThen(kernelUniform(ctx, moePermuteKernel, { rows: N, h, k: 0 }), [
      x.buffer,
      rowToken.buffer,
      scale.buffer,
      xp.buffer,
    ]),
    wg,
  );
}

/** y[t, :] = Σ_j w[t, j] · yp[pickRow[t, j], :] over kept picks: yp [N, h], pickRow [T, k], w [T, k] → y [T, h]. */
export function moeUnpermute(ctx: KernelContext, yp: GpuTensor, pickRow: GpuTensor, w: GpuTensor, y: GpuTensor): void {
  const op = 'moeUnpermute';
  const [, h] = rowsCols(op, yp, 'the permuted rows [N, h]');
  const [T, k] = rowsCols(op, pickRow, 'the pick table [T, k]');
  expectShape(op, w.name, w.shape, [T, k], `one weight per pick of "${pickRow.name}"`);
  expectShape(op, y.name, y.shape, [T, h], `T = ${T} tokens of width h = ${h}`);
  if (T * h === 0) return;
  const wg = grid1d(ctx.device.limits, op, y.name, y.shape, T * h);
  ctx.dispatch(
    op,
    kernelPipeline(ctx, moeUnpermuteKernel),
    uniformThen(kernelUniform(ctx, moeUnpermuteKernel, { rows: T, h, k }), [
      yp.buffer,
      pickRow.buffer,
      w.buffer,
      y.buffer,
    ]),
    wg,
  );
}

/** dw[t, j] = ⟨dy[t, :], yp[pickRow[t, j], :]⟩ (0 when dropped): dy [T, h], yp [N, h], pickRow [T, k] → dw [T, k]. */
export function moeCombineProbGrad(
  ctx: KernelContext,
  dy: GpuTensor,
  yp: GpuTensor,
  pickRow: GpuTensor,
  dw: GpuTensor,
): void {
  const op = 'moeCombineProbGrad';
  const [T, h] = rowsCols(op, dy, 'the output gradient [T, h]');
  const [, hp] = rowsCols(op, yp, 'the permuted rows [N, h]');
  if (hp !== h)
    throw new Error(`${op}: tensor "${yp.name}" has rows of ${hp}; "${dy.name}" has rows of ${h}: they must match.`);
  const [Tp, k] = rowsCols(op, pickRow, 'the pick table [T, k]');
  expectShape(op, pickRow.name, pickRow.shape, [T, k], `one row of picks per token of "${dy.name}"`);
  expectShape(op, dw.name, dw.shape, [Tp, k], `one gradient per pick of "${pickRow.name}"`);
  if (T * k === 0) return;
  const wg = grid1d(ctx.device.limits, op, dw.name, dw.shape, T * k);
  ctx.dispatch(
    op,
    kernelPipeline(ctx, moeCombineProbGradKernel),
    uniformThen(kernelUniform(ctx, moeCombineProbGradKernel, { rows: T, h, k }), [
      dy.buffer,
      yp.buffer,
      pickRow.buffer,
      dw.buffer,
    ]),
    wg,
  );
}
