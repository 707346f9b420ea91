import code from '../../shaders/swiglu.wgsl?raw';
import type { KernelContext } from './context.ts';
import { dispatchElementwise } from './elementwise.ts';
import type { GpuTensor } from './tensor.ts';

/**
 * y = silu(g) ⊙ u, elementwise; g (gate), u (up) and y share one shape, e.g. [s, b, ffn/t]
 * (the activation of the SwiGLU MLP, local to each TP rank).
 */
export function swiglu(ctx: KernelContext, g: GpuTensor, u: GpuTensor, y: GpuTensor): void {
  dispatchElementwise(ctx, 'swiglu', { label: 'swiglu', code, entryPoint: 'swiglu' }, [g, u, y]);
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
  dispatchElementwise(ctx, 'swigluBackward', { label: 'swiglu', code, entryPoint: 'swiglu_backward' }, [
    g,
    u,
    dy,
    dg,
    du,
  ]);
}
