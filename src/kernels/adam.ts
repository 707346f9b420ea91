import code from '../../shaders/adam.wgsl?raw';
import { adamCorrections, type AdamHyper } from '../reference/adam.ts';
import { uniformThen, type KernelContext } from './context.ts';
import { grid1d } from './grid.ts';
import { numel } from '../core/shape.ts';
import { expectShape } from './limits.ts';
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
  const words = new ArrayBuffer(32);
  new Uint32Array(words, 0, 1)[0] = n;
  new Float32Array(words, 4, 6).set([h.lr, h.beta1, h.beta2, h.eps, c1, c2]);
  const params = ctx.uniform(new Uint32Array(words));
  ctx.dispatch(
    'adam',
    ctx.pipeline('adam', code, 'adam'),
    uniformThen(params, [p.buffer, g.buffer, m.buffer, v.buffer]),
    grid1d(ctx.device.limits, 'adam', p.name, p.shape, n),
  );
}
