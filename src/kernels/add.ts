import code from '../../shaders/add.wgsl?raw';
import type { KernelContext } from './context.ts';
import { grid1d } from './grid.ts';
import { expectShape, numel } from './limits.ts';
import type { GpuTensor } from './tensor.ts';

/** out = a + b, elementwise; a, b, out share one shape (residual connection). */
export function add(ctx: KernelContext, a: GpuTensor, b: GpuTensor, out: GpuTensor): void {
  expectShape('add', b.name, b.shape, a.shape, `same shape as "${a.name}"`);
  expectShape('add', out.name, out.shape, a.shape, `same shape as "${a.name}"`);
  const n = numel(a.shape);
  const wg = grid1d(ctx.device.limits, 'add', a.name, a.shape, n);
  const params = ctx.uniform(new Uint32Array([n, 0, 0, 0]));
  ctx.dispatch('add', ctx.pipeline('add', code, 'add'), [
    { binding: 0, buffer: params },
    { binding: 1, buffer: a.buffer },
    { binding: 2, buffer: b.buffer },
    { binding: 3, buffer: out.buffer },
  ], wg);
}

/** acc += b, elementwise (gradient accumulation); acc and b share one shape. */
export function addInPlace(ctx: KernelContext, acc: GpuTensor, b: GpuTensor): void {
  expectShape('addInPlace', b.name, b.shape, acc.shape, `same shape as "${acc.name}"`);
  const n = numel(acc.shape);
  const wg = grid1d(ctx.device.limits, 'addInPlace', acc.name, acc.shape, n);
  const params = ctx.uniform(new Uint32Array([n, 0, 0, 0]));
  ctx.dispatch('add_inplace', ctx.pipeline('add', code, 'add_inplace'), [
    { binding: 0, buffer: params },
    { binding: 1, buffer: acc.buffer },
    { binding: 2, buffer: b.buffer },
  ], wg);
}
