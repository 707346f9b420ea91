import { scaleKernel } from '../reference/scale.ts';
import type { KernelContext } from './context.ts';
import { dispatchKernel } from './dispatch-kernel.ts';
import type { GpuTensor } from './tensor.ts';

/** x ← factor · x in place, any shape. */
export function scale(ctx: KernelContext, x: GpuTensor, factor: number): void {
  dispatchKernel(ctx, scaleKernel, [x], { factor });
}
