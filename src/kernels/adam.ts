import { packUniform } from '../core/wgsl-layout.ts';
import { adamCorrections, adamShader, type AdamHyper } from '../reference/adam.ts';
import { uniformThen, type KernelContext } from './context.ts';
import { grid1d } from './grid.ts';
import { numel } from '../core/shape.ts';
import { expectShape } from './limits.ts';
import { shaderSource } from './shader-source.ts';
import type { GpuTensor } from './tensor.ts';

/**
 * One Adam step at step k ≥ 1, in place: p (a weight shard, any shape), its gradient g and its
 * moments m, v (same shape) — m ← β1·m + (1−β1)·g, v ← β2·v + (1−β2)·g², p ← p − lr·m̂/(√v̂ + ε).
 */
export function adamStep(
  ctx: KernelContext,
  p: GpuTensor,
  g: GpuTensor,
  m: GpuTensor,
  v: GpuTensor,
  h: AdamHyper,
  k: number,
): void {
  for (const t of [g, m, v]) expectShape('adam', t.name, t.shape, p.shape, `same shape as "${p.name}"`);
  const { c1, c2 } = adamCorrections(h, k);
  const n = numel(p.shape);
  const { code, params: layout } = shaderSource(adamShader);
  const params = ctx.uniform(
    packUniform(layout, { n, lr: h.lr, beta1: h.beta1, beta2: h.beta2, eps: h.eps, c1, c2 }, 'adam'),
  );
  ctx.dispatch(
    'adam',
    ctx.pipeline(adamShader.file, code, 'adam'),
    uniformThen(params, [p.buffer, g.buffer, m.buffer, v.buffer]),
    grid1d(ctx.device.limits, 'adam', p.name, p.shape, n),
  );
}
