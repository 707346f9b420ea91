import code from '../../shaders/add.wgsl?raw';
import type { KernelContext } from './context.ts';
import { dispatchElementwise } from './elementwise.ts';
import type { GpuTensor } from './tensor.ts';

/** out = a + b, elementwise; a, b, out share one shape (residual connection). */
export function add(ctx: KernelContext, a: GpuTensor, b: GpuTensor, out: GpuTensor): void {
  dispatchElementwise(ctx, 'add', { label: 'add', code, entryPoint: 'add' }, [a, b, out]);
}

/** acc += b, elementwise (gradient accumulation); acc and b share one shape. */
export function addInPlace(ctx: KernelContext, acc: GpuTensor, b: GpuTensor): void {
  dispatchElementwise(ctx, 'addInPlace', { label: 'add', code, entryPoint: 'add_inplace' }, [acc, b]);
}
