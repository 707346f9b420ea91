import { uniformThen, type KernelContext } from './context.ts';
import { grid1d } from './grid.ts';
import { expectShape } from './limits.ts';
import { numel } from '../core/shape.ts';
import type { GpuTensor } from './tensor.ts';

/** One entry point of a WGSL module whose every invocation handles one element. */
export interface ElementwiseKernel {
  /** Module label (one shader file) and its source. */
  readonly label: string;
  readonly code: string;
  readonly entryPoint: string;
}

/**
 * Dispatches `kernel` over the n = numel(tensors[0]) elements of tensors that all share one shape
 * (`op` names the caller in errors). Binding 0 is the uniform [n, 0, 0, 0], bindings 1… are the
 * tensors in order.
 */
export function dispatchElementwise(
  ctx: KernelContext,
  op: string,
  kernel: ElementwiseKernel,
  tensors: readonly [GpuTensor, ...GpuTensor[]],
): void {
  const [first, ...rest] = tensors;
  for (const t of rest) expectShape(op, t.name, t.shape, first.shape, `same shape as "${first.name}"`);
  const n = numel(first.shape);
  const wg = grid1d(ctx.device.limits, op, first.name, first.shape, n);
  const params = ctx.uniform(new Uint32Array([n, 0, 0, 0]));
  ctx.dispatch(
    kernel.entryPoint,
    ctx.pipeline(kernel.label, kernel.code, kernel.entryPoint),
    uniformThen(
      params,
      tensors.map((t) => t.buffer),
    ),
    wg,
  );
}
