import { formatShape, numel } from '../core/shape.ts';
import {
  rmsnormBackwardKernel,
  rmsnormKernel,
  rmsnormWeightGradKernel,
  type RmsnormWeightGradArgs,
} from '../reference/rmsnorm.ts';
import { uniformThen, type KernelContext } from './context.ts';
import { dispatchKernel, kernelPipeline, kernelUniform } from './dispatch-kernel.ts';
import { grid1d } from './grid.ts';
import { expectShape } from './limits.ts';
import { checkInteger } from './rowwise.ts';
import type { GpuTensor } from './tensor.ts';

/** Default ε added to mean(x²) (Megatron's layernorm_epsilon). */
export const rmsnormEps = 1e-5;

/** Which rows rmsnormWeightGrad sums, and whether it adds to dg instead of overwriting it (ε is the CPU twin's alone). */
export type RmsnormWeightGradOptions = Omit<RmsnormWeightGradArgs, 'eps'>;

/** h, rows and the per-row shape [...] of x [..., h]. */
function dims(op: string, x: GpuTensor): { h: number; rows: number; rowShape: number[] } {
  if (x.shape.length < 1)
    throw new Error(
      `${op}: tensor "${x.name}" has shape ${formatShape(x.shape)}; rmsnorm needs at least 1 dimension [..., h].`,
    );
  const h = x.shape[x.shape.length - 1];
  return { h, rows: h === 0 ? 0 : numel(x.shape) / h, rowShape: x.shape.slice(0, -1) };
}

/**
 * y = x / rms(x) · g over the last dim, rms(x) = sqrt(mean(x²) + eps), eps = 1e-5 by default:
 * x [..., h], g [h] → y [..., h] and rstd [...] = 1/rms(x) (saved for the backward).
 */
export function rmsnorm(
  ctx: KernelContext,
  x: GpuTensor,
  g: GpuTensor,
  y: GpuTensor,
  rstd: GpuTensor,
  options: { readonly eps?: number } = {},
): void {
  const { eps = rmsnormEps } = options;
  const { h, rowShape } = dims('rmsnorm', x);
  expectShape('rmsnorm', g.name, g.shape, [h], `the gain is [h] for "${x.name}"`);
  expectShape('rmsnorm', y.name, y.shape, x.shape, `same shape as "${x.name}"`);
  expectShape('rmsnorm', rstd.name, rstd.shape, rowShape, `one value per row of "${x.name}"`);
  dispatchKernel(ctx, rmsnormKernel, [x, g, y, rstd], { eps });
}

/**
 * dx of y = x · rstd · g: dx = rstd·(dy ⊙ g) − x · rstd³ · mean(dy ⊙ g ⊙ x); x, dy, dx [..., h],
 * g [h], rstd [...] from the forward. dg is separate: rmsnormWeightGrad.
 */
export function rmsnormBackward(
  ctx: KernelContext,
  x: GpuTensor,
  g: GpuTensor,
  rstd: GpuTensor,
  dy: GpuTensor,
  dx: GpuTensor,
): void {
  const { h, rowShape } = dims('rmsnormBackward', x);
  expectShape('rmsnormBackward', g.name, g.shape, [h], `the gain is [h] for "${x.name}"`);
  expectShape('rmsnormBackward', rstd.name, rstd.shape, rowShape, `one value per row of "${x.name}"`);
  expectShape('rmsnormBackward', dy.name, dy.shape, x.shape, `same shape as "${x.name}"`);
  expectShape('rmsnormBackward', dx.name, dx.shape, x.shape, `same shape as "${x.name}"`);
  dispatchKernel(ctx, rmsnormBackwardKernel, [x, g, rstd, dy, dx], { eps: rmsnormEps }); // ε: the CPU twin's alone
}

/**
 * dg[j] = Σ_{rows r in [rowStart, rowEnd)} dy[r, j] · x[r, j] · rstd[r]: x, dy [..., h], rstd [...]
 * → dg [h], overwritten or (accumulate) added to. dg is a sum over tokens, so it splits into
 * per-block partials that add up: under sequence parallel each rank calls this on its own
 * [s/t, b, h] tokens and the ranks' dg are then all-reduced (SUM) over the TP group (Megatron
 * finalize_model_grads); the row range and `accumulate` let one rank add its tokens block by block.
 */
export function rmsnormWeightGrad(
  ctx: KernelContext,
  x: GpuTensor,
  rstd: GpuTensor,
  dy: GpuTensor,
  dg: GpuTensor,
  options: RmsnormWeightGradOptions = {},
): void {
  const { h, rows, rowShape } = dims('rmsnormWeightGrad', x);
  const { rowStart = 0, rowEnd = rows, accumulate = false } = options;
  expectShape('rmsnormWeightGrad', rstd.name, rstd.shape, rowShape, `one value per row of "${x.name}"`);
  expectShape('rmsnormWeightGrad', dy.name, dy.shape, x.shape, `same shape as "${x.name}"`);
  expectShape('rmsnormWeightGrad', dg.name, dg.shape, [h], `the gain's gradient is [h] for "${x.name}"`);
  checkInteger('rmsnormWeightGrad', 'rowEnd', rowEnd, 0, rows);
  checkInteger('rmsnormWeightGrad', 'rowStart', rowStart, 0, rowEnd);
  const wg = grid1d(ctx.device.limits, 'rmsnormWeightGrad', dg.name, dg.shape, h);
  const params = { rows, h, eps: 0, row_start: rowStart, row_end: rowEnd, accumulate: accumulate ? 1 : 0 };
  ctx.dispatch(
    rmsnormWeightGradKernel.entryPoint,
    kernelPipeline(ctx, rmsnormWeightGradKernel),
    uniformThen(kernelUniform(ctx, rmsnormWeightGradKernel, params), [x.buffer, rstd.buffer, dy.buffer, dg.buffer]),
    wg,
  );
}
