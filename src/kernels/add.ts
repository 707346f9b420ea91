import { addInPlaceKernel, addKernel } from '../reference/add.ts';
import type { KernelContext } from './context.ts';
import { dispatchKernel } from './dispatch-kernel.ts';
import type { GpuTensor } from './tensor.ts';

/** out = a + b, elementwise; a, b, out share one shape (residual connection). */
export function add(ctx: KernelContext, a: GpuTensor, b: GpuTensor, out: GpuTensor): void {
  dispatchKernel(ctx, addKernel, [a, b, out], {});
}

/** acc += b, elementwise (gradient accumulation); acc and b share one shape. */
export function addInPlace(ctx: KernelContext, acc: GpuTensor, b: GpuTensor): void {
  dispatchKernel(ctx, addInPlaceKernel, [acc, b], {});
}
