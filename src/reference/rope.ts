import type { KernelSpec, ShaderSpec } from './kernel-spec.ts';

/** Options of the rope twin; the same meaning as the kernel's RopeOptions. */
export interface RopeRefOptions {
  readonly base?: number;
  readonly positionOffset?: number;
}

/**
 * CPU twin of rope in float64 on x [s, b, heads, d] given as `shape`: pair (k, k + d/2) of
 * token t is rotated by θ = (offset + t) · base^(−2k/d), or by −θ when `inverse` (the backward).
 */
export function ropeRef(
  x: ArrayLike<number>,
  shape: readonly number[],
  options: RopeRefOptions = {},
  inverse = false,
): Float64Array {
  const { base = 10000, positionOffset = 0 } = options;
  const [s, b, heads, d] = shape;
  const half = d / 2;
  const out = new Float64Array(x.length);
  for (let t = 0; t < s; t++) {
    const pos = positionOffset + t;
    for (let v = t * b * heads; v < (t + 1) * b * heads; v++) {
      for (let k = 0; k < half; k++) {
        const theta = pos * base ** ((-2 * k) / d);
        const c = Math.cos(theta),
          sn = (inverse ? -1 : 1) * Math.sin(theta);
        const lo = v * d + k,
          hi = lo + half;
        out[lo] = x[lo] * c - x[hi] * sn;
        out[hi] = x[hi] * c + x[lo] * sn;
      }
    }
  }
  return out;
}

/** shaders/rope.wgsl: a 32-byte header, then ω_k for k < d/2 ≤ 256 as 64 vec4f. */
export const ropeShader: ShaderSpec = {
  file: 'rope',
  params: [
    { name: 'pairs', type: 'u32' },
    { name: 'half', type: 'u32' },
    { name: 'bh', type: 'u32' },
    { name: 'offset', type: 'u32' },
    { name: 'sign', type: 'f32' },
    { name: '_pad0', type: 'u32' },
    { name: '_pad1', type: 'u32' },
    { name: '_pad2', type: 'u32' },
    { name: 'omega', type: 'array<vec4f, 64>' },
  ],
};

const ropeModule = 'rotary position embedding (apply_rotary_pos_emb)';

const ropeBindings: KernelSpec['bindings'] = [
  { name: 'x', access: 'read' },
  { name: 'out', access: 'write' },
];

/** Rotate-half RoPE by θ = position · ω_k on x [s, b, heads, d] (its own grid: one invocation per pair, ω in Params). */
export const ropeKernel: KernelSpec<'rope', RopeRefOptions> = {
  name: 'rope',
  shader: ropeShader,
  entryPoint: 'rope',
  megatron: ropeModule,
  cost: { perElement: 6 },
  bindings: ropeBindings,
  twin: ([x], d, options) => [ropeRef(x, d.shape, options)],
};

/** The RoPE backward: rotation by −θ (the same entry point, sign −1). */
export const ropeBackwardKernel: KernelSpec<'ropeBackward', RopeRefOptions> = {
  ...ropeKernel,
  name: 'ropeBackward',
  twin: ([dy], d, options) => [ropeRef(dy, d.shape, options, true)],
};
