import { describe, expect, test } from 'vitest';
import { gemmStoreKey, type GemmChoiceStore, type StoredGemmChoices } from '../../../src/kernels/gemm-cache.ts';
import { adapterKey, chosenGemmVariant, gemmChoices, gemmShapeClass } from '../../../src/kernels/gemm-choice.ts';
import { indexedDbGemmStore } from '../../../src/kernels/gemm-store-idb.ts';
import { tuneGemm } from '../../../src/kernels/gemm-tuner.ts';
import { gemmVariants, type GemmVariant } from '../../../src/kernels/gemm-variants.ts';
import { KernelContext } from '../../../src/kernels/context.ts';
import { denseProblem } from '../../../src/reference/gemm.ts';
import { gpuCase } from '../gpu-case.ts';

/** A store in memory that records what was saved. */
function memoryStore(initial: StoredGemmChoices = {}): GemmChoiceStore & { data: StoredGemmChoices } {
  const data = { ...initial };
  return { data, load: async () => ({ ...data }), save: async (e) => void Object.assign(data, e) };
}

describe('GEMM tuning decisions kept across page loads', () => {
  test('a decision is saved under the kernel hash, and a later load with it in the store times nothing', async () => {
    await gpuCase(async (ctx) => {
      const p = denseProblem(40, 24, 20, { transA: true });
      const key = `${adapterKey(ctx.device)}|${gemmShapeClass(p)}`;
      const store = memoryStore();
      const [tuned] = await tuneGemm(ctx, [p], { store });
      expect(store.data).toEqual({ [gemmStoreKey(adapterKey(ctx.device), gemmShapeClass(p))]: tuned.chosen });
      // A new page load: nothing decided in this realm, the store has it.
      gemmChoices.delete(key);
      expect(await tuneGemm(ctx, [p], { store })).toEqual([]);
      expect(chosenGemmVariant(ctx.device, p)).toBe(tuned.chosen);
    });
  });

  test('a decision stored for other kernels (another hash) is ignored and the class is tuned again', async () => {
    await gpuCase(async (ctx) => {
      const p = denseProblem(24, 40, 20, { transB: true });
      const cls = gemmShapeClass(p);
      const stale = gemmStoreKey(adapterKey(ctx.device), cls, '00000000');
      const store = memoryStore({ [stale]: 'tiled' });
      gemmChoices.delete(`${adapterKey(ctx.device)}|${cls}`);
      const tunings = await tuneGemm(ctx, [p], { store });
      expect(tunings.map((t) => t.shapeClass)).toEqual([cls]);
      expect(store.data[stale]).toBe('tiled'); // kept for whoever runs those kernels, not used here
      expect(store.data[gemmStoreKey(adapterKey(ctx.device), cls)]).toBe(tunings[0].chosen);
    });
  });

  test('a stored decision is verified on the device before use: one naming a variant this device cannot run is dropped and its class tuned again', async () => {
    // A second device on the same adapter without optional features: the subgroup variants
    // cannot run on it, though a store written by a device with subgroups names one.
    const adapter = await navigator.gpu.requestAdapter();
    const device = await adapter!.requestDevice();
    device.pushErrorScope('validation');
    try {
      const ctx = new KernelContext(device);
      const p = denseProblem(20, 24, 40, { transA: true, transB: true });
      const cls = gemmShapeClass(p);
      const key = gemmStoreKey(adapterKey(device), cls);
      expect(gemmVariants.quad16.needsSubgroups).toBe(true);
      const store = memoryStore({ [key]: 'quad16' });
      gemmChoices.delete(`${adapterKey(device)}|${cls}`);
      const tunings = await tuneGemm(ctx, [p], { store });
      expect(tunings.map((t) => t.shapeClass)).toEqual([cls]);
      expect(gemmVariants[tunings[0].chosen].needsSubgroups).toBe(false);
      expect(Object.keys(tunings[0].gflops).every((v) => !gemmVariants[v as GemmVariant].needsSubgroups)).toBe(true);
      expect(store.data[key]).toBe(tunings[0].chosen);
      expect(chosenGemmVariant(device, p)).toBe(tunings[0].chosen);
    } finally {
      const err = await device.popErrorScope();
      device.destroy();
      expect(err?.message ?? null, 'WebGPU validation error').toBeNull();
    }
  });

  test('the IndexedDB store round-trips entries and keeps the ones it was not given', async () => {
    const store = indexedDbGemmStore();
    const a = gemmStoreKey('test-adapter', 'M9N9K9nn', 'ffffffff');
    const b = gemmStoreKey('test-adapter', 'M8N8K8nn', 'ffffffff');
    await store.save({ [a]: 'quad16' });
    await store.save({ [b]: 'rb4' });
    const loaded = await store.load();
    expect(loaded[a]).toBe('quad16');
    expect(loaded[b]).toBe('rb4');
  });
});
