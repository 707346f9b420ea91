import { formatShape } from '../../core/shape.ts';
import { moeGroupedGemmKernel, moeGroupedGemmWgradKernel } from '../../reference/moe/grouped-gemm.ts';
import { uniformThen, type KernelContext } from '../context.ts';
import { kernelPipeline, kernelUniform } from '../dispatch-kernel.ts';
import { gemmVariants } from '../gemm-variants.ts';
import { checkWorkgroups, expectShape } from '../limits.ts';
import type { GpuTensor } from '../tensor.ts';

// The experts' grouped GEMM on the GPU (shaders/moe-grouped-gemm.wgsl, formulas and twins in
// src/reference/moe/grouped-gemm.ts): one dispatch for all E experts, whatever their row counts.
// The offsets [E + 1] are a tensor (float32 integers, non-decreasing from 0 to N) read by the
// shader only: the grid is sized from N and E, so the host need not know the counts.

/** The tiling's workgroup, the dense GEMM's rb4 variant's: RX × RY lanes, 4 × 4 outputs each. */
const { RX, RY } = gemmVariants.rb4.constants;

function dims2(op: string, t: GpuTensor, what: string): [number, number] {
  if (t.shape.length !== 2)
    throw new Error(`${op}: tensor "${t.name}" has shape ${formatShape(t.shape)}; ${what} must be 2-D.`);
  return [t.shape[0], t.shape[1]];
}

function expertCount(op: string, offsets: GpuTensor): number {
  if (offsets.shape.length !== 1 || offsets.shape[0] < 2)
    throw new Error(
      `${op}: tensor "${offsets.name}" has shape ${formatShape(offsets.shape)}; the offsets must be [E + 1] with E ≥ 1.`,
    );
  return offsets.shape[0] - 1;
}

/**
 * C[n, :] = A[n, :] · op(B_e) for the rows n of each expert e: A [N, K], B [E, K, Nc] (transB:
 * [E, Nc, K]), offsets [E + 1] → C [N, Nc]. One dispatch of (⌈Nc/4RX⌉, ⌈N/4RY⌉ + E) workgroups.
 */
export function moeGroupedGemm(
  ctx: KernelContext,
  a: GpuTensor,
  b: GpuTensor,
  offsets: GpuTensor,
  c: GpuTensor,
  transB = false,
): void {
  const op = 'moeGroupedGemm';
  const [N, K] = dims2(op, a, 'the permuted rows A [N, K]');
  const E = expertCount(op, offsets);
  const [, Nc] = dims2(op, c, 'the output C [N, Nc]');
  expectShape(op, c.name, c.shape, [N, Nc], `one output row per row of "${a.name}"`);
  expectShape(
    op,
    b.name,
    b.shape,
    transB ? [E, Nc, K] : [E, K, Nc],
    `one weight per expert of "${offsets.name}"${transB ? ', read transposed' : ''}`,
  );
  if (N === 0 || Nc === 0) return;
  const wg: [number, number, number] = [Math.ceil(Nc / (4 * RX)), Math.ceil(N / (4 * RY)) + E, 1];
  checkWorkgroups(ctx.device.limits, op, c.name, c.shape, wg, [
    'x (column tiles)',
    'y (row tiles over the experts)',
    'z',
  ]);
  const params = { N, K, Nc, E, sBk: transB ? 1 : Nc, sBn: transB ? K : 1, bsB: K * Nc };
  ctx.dispatch(
    op,
    kernelPipeline(ctx, moeGroupedGemmKernel, { RX, RY }),
    uniformThen(kernelUniform(ctx, moeGroupedGemmKernel, params), [a.buffer, b.buffer, offsets.buffer, c.buffer]),
    wg,
  );
}

/** dB_e = A_eᵀ · G_e for every expert: A [N, K], G [N, Nc], offsets [E + 1] → dB [E, K, Nc]. */
export function moeGroupedGemmWgrad(
  ctx: KernelContext,
  a: GpuTensor,
  g: GpuTensor,
  offsets: GpuTensor,
  db: GpuTensor,
): void {
  const op = 'moeGroupedGemmWgrad';
  const [N, K] = dims2(op, a, 'the permuted rows A [N, K]');
  const [, Nc] = dims2(op, g, 'the output gradient G [N, Nc]');
  expectShape(op, g.name, g.shape, [N, Nc], `one gradient row per row of "${a.name}"`);
  const E = expertCount(op, offsets);
  expectShape(op, db.name, db.shape, [E, K, Nc], `one weight gradient per expert of "${offsets.name}"`);
  if (K === 0 || Nc === 0) return;
  const wg: [number, number, number] = [Math.ceil(Nc / (4 * RX)), Math.ceil(K / (4 * RY)), E];
  checkWorkgroups(ctx.device.limits, op, db.name, db.shape, wg, ['x (column tiles)', 'y (row tiles)', 'z (experts)']);
  ctx.dispatch(
    op,
    kernelPipeline(ctx, moeGroupedGemmWgradKernel, { RX, RY }),
    uniformThen(kernelUniform(ctx, moeGroupedGemmWgradKernel, { N, K, Nc, E, sBk: 0, sBn: 0, bsB: 0 }), [
      a.buffer,
      g.buffer,
      offsets.buffer,
      db.buffer,
    ]),
    wg,
  );
}
