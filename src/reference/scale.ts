import type { GridKernelSpec, ShaderSpec } from './kernel-spec.ts';

/** CPU twin of scale: x ← factor · x, elementwise, the factor a float32 as the uniform holds it (one product, rounded once). */
export function scaleRef(x: ArrayLike<number>, factor: number): Float64Array {
  const f = Math.fround(factor);
  return Float64Array.from(x, (v) => Math.fround(v * f));
}

/** shaders/scale.wgsl: Params { n, factor } padded to 16 bytes. */
export const scaleShader: ShaderSpec = {
  file: 'scale',
  params: [
    { name: 'n', type: 'u32' },
    { name: 'factor', type: 'f32' },
    { name: '_pad0', type: 'u32' },
    { name: '_pad1', type: 'u32' },
  ],
};

/** scale's argument: the factor (data parallel: 1/d, Megatron's gradient_scaling_factor). */
export interface ScaleArgs {
  readonly factor: number;
}

/** x ← factor · x in place (a DP bucket's gradients scaled by 1/d before they are summed over the DP group). */
export const scaleKernel: GridKernelSpec<'scale', ScaleArgs> = {
  name: 'scale',
  shader: scaleShader,
  entryPoint: 'scale',
  megatron: 'gradient scaling (param_and_grad_buffer.py)',
  cost: { perElement: 1 },
  grid: 'elements',
  bindings: [{ name: 'x', access: 'read_write' }],
  params: ({ n }, { factor }) => ({ n, factor }),
  twin: ([x], _d, { factor }) => [scaleRef(x, factor)],
};
