import { formatShape, numel } from '../core/shape.ts';
import { ropeBackwardKernel, ropeKernel } from '../reference/rope.ts';
import { uniformThen, type KernelContext } from './context.ts';
import { kernelPipeline, kernelUniform } from './dispatch-kernel.ts';
import { grid1d } from './grid.ts';
import { expectShape } from './limits.ts';
import { checkInteger } from './rowwise.ts';
import type { GpuTensor } from './tensor.ts';

/** Options of rope and ropeBackward. */
export interface RopeOptions {
  /** θ_k = pos · base^(−2k/headDim); default 10000. */
  readonly base?: number;
  /**
   * Global position of local token 0 (a rank holding sequence shard [s0, s0 + s) passes s0);
   * token t is at position offset + t. Default 0; float32 positions are exact below 2^24.
   */
  readonly positionOffset?: number;
}

/** Largest headDim / 2 the kernel takes (its frequency table holds 256 values). */
export const maxRopePairs = 256;

function dispatchRope(
  op: string,
  ctx: KernelContext,
  x: GpuTensor,
  out: GpuTensor,
  options: RopeOptions,
  sign: 1 | -1,
): void {
  const { base = 10000, positionOffset = 0 } = options;
  if (x.shape.length !== 4) {
    throw new Error(
      `${op}: tensor "${x.name}" has shape ${formatShape(x.shape)}; rope needs 4 dimensions [s, b, heads, headDim].`,
    );
  }
  const d = x.shape[3];
  if (d % 2 !== 0) {
    throw new Error(
      `${op}: tensor "${x.name}" has shape ${formatShape(x.shape)}; headDim ${d} must be even (rotate-half pairs k with k + headDim/2).`,
    );
  }
  expectShape(op, out.name, out.shape, x.shape, `same shape as "${x.name}"`);
  if (!(base > 0) || !Number.isFinite(base))
    throw new Error(`${op}: option "base" is ${base}; it must be a finite number > 0.`);
  checkInteger(op, 'positionOffset', positionOffset, 0, 2 ** 24 - x.shape[0]);
  if (d / 2 > maxRopePairs) {
    throw new Error(
      `${op}: tensor "${x.name}" has shape ${formatShape(x.shape)}; headDim ${d} exceeds the kernel's ${2 * maxRopePairs} (its frequencies live in the uniform block).`,
    );
  }
  const pairs = numel(x.shape) / 2;
  const wg = grid1d(ctx.device.limits, op, x.name, x.shape, pairs);
  // ω_k = base^(−2k/d) in float64, rounded once to float32 (as a float32 table would hold it).
  const omega = Array.from({ length: d / 2 }, (_, k) => base ** ((-2 * k) / d));
  const spec = sign > 0 ? ropeKernel : ropeBackwardKernel;
  const params = kernelUniform(ctx, spec, {
    pairs,
    half: d / 2,
    bh: x.shape[1] * x.shape[2],
    offset: positionOffset,
    sign,
    omega,
  });
  ctx.dispatch(op, kernelPipeline(ctx, spec), uniformThen(params, [x.buffer, out.buffer]), wg);
}

/**
 * Rotary embedding, rotate-half pairing (k ↔ k + headDim/2): [s, b, heads, headDim] → same shape.
 * Call once for Q [s, b, nq, d] and once for K [s, b, nkv, d]. headDim must be even and ≤ 512.
 */
export function rope(ctx: KernelContext, x: GpuTensor, out: GpuTensor, options: RopeOptions = {}): void {
  dispatchRope('rope', ctx, x, out, options, 1);
}

/** Backward of rope: dx = rotation of dy by −θ; [s, b, heads, headDim] → same shape. */
export function ropeBackward(ctx: KernelContext, dy: GpuTensor, dx: GpuTensor, options: RopeOptions = {}): void {
  dispatchRope('ropeBackward', ctx, dy, dx, options, -1);
}
