import code from '../../shaders/swiglu.wgsl?raw';
import type { KernelContext } from './context.ts';
import { grid1d } from './grid.ts';
import { expectShape, numel } from './limits.ts';
import type { GpuTensor } from './tensor.ts';

/**
 * y = silu(g) ⊙ u, elementwise; g (gate), u (up) and y share one shape, e.g. [s, b, ffn/t]
 * (the activation of the SwiGLU MLP, local to each TP rank).
 */
export function swiglu(ctx: KernelContext, g: GpuTensor, u: GpuTensor, y: GpuTensor): void {
  expectShape('swiglu', u.name, u.shape, g.shape, `same shape as "${g.name}"`);
  expectShape('swiglu', y.name, y.shape, g.shape, `same shape as "${g.name}"`);
  const n = numel(g.shape);
  const wg = grid1d(ctx.device.limits, 'swiglu', g.name, g.shape, n);
  const params = ctx.uniform(new Uint32Array([n, 0, 0, 0]));
  ctx.dispatch('swiglu', ctx.pipeline('swiglu', code, 'swiglu'), [
    { binding: 0, buffer: params },
    { binding: 1, buffer: g.buffer },
    { binding: 2, buffer: u.buffer },
    { binding: 3, buffer: y.buffer },
  ], wg);
}

/**
 * Backward of y = silu(g) ⊙ u: du = dy ⊙ silu(g), dg = dy ⊙ u ⊙ σ(g)(1 + g(1 − σ(g)));
 * g, u, dy, dg, du share one shape.
 */
export function swigluBackward(ctx: KernelContext, g: GpuTensor, u: GpuTensor, dy: GpuTensor, dg: GpuTensor, du: GpuTensor): void {
  for (const t of [u, dy, dg, du]) expectShape('swigluBackward', t.name, t.shape, g.shape, `same shape as "${g.name}"`);
  const n = numel(g.shape);
  const wg = grid1d(ctx.device.limits, 'swigluBackward', g.name, g.shape, n);
  const params = ctx.uniform(new Uint32Array([n, 0, 0, 0]));
  ctx.dispatch('swiglu_backward', ctx.pipeline('swiglu', code, 'swiglu_backward'), [
    { binding: 0, buffer: params },
    { binding: 1, buffer: g.buffer },
    { binding: 2, buffer: u.buffer },
    { binding: 3, buffer: dy.buffer },
    { binding: 4, buffer: dg.buffer },
    { binding: 5, buffer: du.buffer },
  ], wg);
}
