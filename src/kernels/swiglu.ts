import { swigluBackwardKernel, swigluKernel } from '../reference/swiglu.ts';
import type { KernelContext } from './context.ts';
import { dispatchKernel } from './dispatch-kernel.ts';
import type { GpuTensor } from './tensor.ts';

/**
 * y = silu(g) ⊙ u, elementwise; g (gate), u (up) and y share one shape, e.g. [s, b, ffn/t]
 * (the activation of the SwiGLU MLP, local to each TP rank).
 */
export function swiglu(ctx: KernelContext, g: GpuTensor, u: GpuTensor, y: GpuTensor): void {
  dispatchKernel(ctx, swigluKernel, [g, u, y], {});
}

/**
 * Backward of y = silu(g) ⊙ u: du = dy ⊙ silu(g), dg = dy ⊙ u ⊙ σ(g)(1 + g(1 − σ(g)));
 * g, u, dy, dg, du share one shape.
 */
export function swigluBackward(
  ctx: KernelContext,
  g: GpuTensor,
  u: GpuTensor,
  dy: GpuTensor,
  dg: GpuTensor,
  du: GpuTensor,
): void {
  dispatchKernel(ctx, swigluBackwardKernel, [g, u, dy, dg, du], {});
}
