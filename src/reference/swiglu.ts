import { addShader } from './add.ts';
import type { GridKernelSpec, ShaderSpec } from './kernel-spec.ts';

/** σ(v) = 1 / (1 + e^−v), evaluated without overflow. */
export function sigmoid(v: number): number {
  const e = Math.exp(-Math.abs(v));
  return v >= 0 ? 1 / (1 + e) : e / (1 + e);
}

/** CPU twin of swiglu in float64: y = silu(g) ⊙ u, elementwise over equal-length g, u. */
export function swigluRef(g: ArrayLike<number>, u: ArrayLike<number>): Float64Array {
  const y = new Float64Array(g.length);
  for (let i = 0; i < g.length; i++) y[i] = g[i] * sigmoid(g[i]) * u[i];
  return y;
}

/** CPU twin of swigluBackward in float64: dg and du of y = silu(g) ⊙ u given dy. */
export function swigluBackwardRef(
  g: ArrayLike<number>,
  u: ArrayLike<number>,
  dy: ArrayLike<number>,
): { dg: Float64Array; du: Float64Array } {
  const dg = new Float64Array(g.length);
  const du = new Float64Array(g.length);
  for (let i = 0; i < g.length; i++) {
    const s = sigmoid(g[i]);
    du[i] = dy[i] * g[i] * s;
    dg[i] = dy[i] * u[i] * s * (1 + g[i] * (1 - s));
  }
  return { dg, du };
}

/** shaders/swiglu.wgsl: Params { n } padded to 16 bytes (the layout of add's). */
export const swigluShader: ShaderSpec = { file: 'swiglu', include: ['sigmoid'], params: addShader.params };

/** y = silu(g) ⊙ u (the SwiGLU MLP's activation). */
export const swigluKernel: GridKernelSpec<'swiglu'> = {
  name: 'swiglu',
  shader: swigluShader,
  entryPoint: 'swiglu',
  megatron: 'SwiGLU activation (MLP)',
  cost: { perElement: 7 },
  grid: 'elements',
  bindings: [
    { name: 'g', access: 'read' },
    { name: 'u', access: 'read' },
    { name: 'y', access: 'write' },
  ],
  params: ({ n }) => ({ n }),
  twin: ([g, u]) => [swigluRef(g, u)],
};

/** dg, du of y = silu(g) ⊙ u given dy. */
export const swigluBackwardKernel: GridKernelSpec<'swigluBackward'> = {
  name: 'swigluBackward',
  shader: swigluShader,
  entryPoint: 'swiglu_backward',
  megatron: 'SwiGLU activation (MLP)',
  cost: { perElement: 12 },
  grid: 'elements',
  bindings: [
    { name: 'g', access: 'read' },
    { name: 'u', access: 'read' },
    { name: 'dy', access: 'read' },
    { name: 'dg', access: 'write' },
    { name: 'du', access: 'write' },
  ],
  params: ({ n }) => ({ n }),
  twin: ([g, u, dy]) => {
    const { dg, du } = swigluBackwardRef(g, u, dy);
    return [dg, du];
  },
};
