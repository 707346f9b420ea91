import { expect, it } from 'vitest';
import type { HostTensor } from '../../../src/comm/host-tensor.ts';
import { createInProcessGroup } from '../../../src/comm/in-process.ts';
import { CpuBackend } from '../../../src/parallel/backend-cpu.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { DeferringBackend } from '../../../src/parallel/deferred-wgrad.ts';
import { blockBackward, blockForward } from '../../../src/parallel/layer.ts';
import { LayerComm } from '../../../src/parallel/layer-comm.ts';
import { rankOwnership } from '../../../src/parallel/ownership.ts';
import { rankWeightArrays, stepInputs, uploadWeights } from '../../../src/parallel/step-data.ts';
import type { WeightSet } from '../../../src/parallel/weights.ts';

// ZB-H1's B and W: one block's backward with its weight-gradient ops set aside gives the same dx at
// once, zero weight gradients until W, and after W the gradients of the whole backward.
it('a backward with its wgrad ops deferred: dx unchanged, gradients only after run(), then equal', async () => {
  const c = configFromPreset('classroom', { vocab: 0 });
  const own = rankOwnership(c)[0]!;
  const { x, dy } = stepInputs(c);
  const backward = async (defer: boolean) => {
    const inner = new CpuBackend();
    const be = new DeferringBackend(inner);
    const lc = new LayerComm(createInProcessGroup(1)[0]!, (t: HostTensor) => t.shape);
    const w = uploadWeights(rankWeightArrays(c, own), (n, shape, data) => be.tensor(n, shape, data));
    const f = await blockForward(be, lc, c, own, w, be.tensor('x', [c.s, c.b, c.h], x!));
    const grads: WeightSet<HostTensor> = {};
    if (defer) be.defer();
    const r = await blockBackward(be, lc, c, w, f.saved, be.tensor('dy', [c.s, c.b, c.h], dy!), grads);
    const dx = await be.read(r.dx);
    const read = async () =>
      Object.fromEntries(
        await Promise.all(Object.entries(grads).map(async ([n, g]) => [n, await be.read(g)] as const)),
      );
    if (!defer) return { dx, grads: await read(), ops: 0 };
    const held = be.take();
    const before = await read();
    held.run();
    return { dx, grads: await read(), before, ops: held.ops };
  };
  const whole = await backward(false);
  const split = await backward(true);
  expect(split.dx).toEqual(whole.dx);
  // q, k, v (three column blocks of wqkv), wo, gate, up, down: one wgrad GEMM each; g1, g2: one RMSNorm weight-gradient kernel each.
  expect(split.ops).toBe(9);
  for (const g of Object.values(split.before!)) expect(g.every((v) => v === 0)).toBe(true);
  expect(split.grads).toEqual(whole.grads);
});

// What a deferred backward holds until W: the tensors its weight-gradient ops read, and no others.
it('a deferred backward frees at B what no weight gradient reads, and W’s inputs only at W', async () => {
  const c = configFromPreset('classroom', { vocab: 0 });
  const own = rankOwnership(c)[0]!;
  const { x, dy } = stepInputs(c);
  const released = new Set<HostTensor>();
  const cpu = new CpuBackend();
  // The CPU backend with each release recorded (CpuBackend's own release does nothing).
  const inner = new Proxy(cpu, {
    get: (target, key) => {
      if (key === 'release') return (t: HostTensor) => void released.add(t);
      const v: unknown = Reflect.get(target, key, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  const be = new DeferringBackend(inner);
  const lc = new LayerComm(createInProcessGroup(1)[0]!, (t: HostTensor) => t.shape);
  const w = uploadWeights(rankWeightArrays(c, own), (n, shape, data) => be.tensor(n, shape, data));
  const f = await blockForward(be, lc, c, own, w, be.tensor('x', [c.s, c.b, c.h], x!));
  be.defer();
  await blockBackward(be, lc, c, w, f.saved, be.tensor('dy', [c.s, c.b, c.h], dy!), {});
  const held = be.take();
  const { attn, mlp } = f.saved;
  // B's own inputs: Q, K, V and the probabilities (attention's dgrad), gate and up (SwiGLU's backward).
  for (const t of [attn.q, attn.k, attn.v, attn.p, mlp.mlp.gate, mlp.mlp.up]) expect(released.has(t)).toBe(true);
  // W's: the block input and x2 (the gains'), the context (wo's), SwiGLU's output (wdown's).
  const wInputs = [f.saved.x, f.saved.x2, attn.ctx, mlp.mlp.act];
  for (const t of wInputs) expect(released.has(t)).toBe(false);
  held.run();
  for (const t of wInputs) expect(released.has(t)).toBe(true);
});
