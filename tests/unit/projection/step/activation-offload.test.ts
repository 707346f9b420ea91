import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import { parseOffloadModules, type ActivationOffload } from '../../../../src/megatron/activation-offload.ts';
import type { TrainingSetup } from '../../../../src/megatron/training-setup.ts';
import { layerOffload, type OffloadTensor } from '../../../../src/projection/step/activation-offload.ts';
import { projectStep } from '../../../../src/projection/step/cluster-projection.ts';

const h100 = { system: systems['dgx-h100'], dtype: 'bf16' as const };
const sizes = { s: 2048, b: 1, h: 2048, heads: 16, groups: 4, ffn: 5632, vocab: 32000 };
const base: TrainingSetup = { sizes, tp: 2, sp: true, layers: 4, gpus: 8, globalBatch: 8, overlap: true };
const offload = (modules: string, more: Partial<ActivationOffload> = {}): TrainingSetup => ({
  ...base,
  activationOffload: { modules: parseOffloadModules(modules), fraction: 1, minTensorElements: 1 << 20, ...more },
});

describe('--fine-grained-activation-offloading (transformer_config.py:1229-1265, core_v0.19.0)', () => {
  it("takes the modules' inputs off the GPU: core_attn Q, K, V and attn_proj's context, [s, b, n/t·d] each", async () => {
    const none = await projectStep(base, h100);
    const off = await projectStep(offload('core_attn attn_proj'), h100);
    // 8 query heads (K and V repeated to them without flash attention) × d 128 × s 2048, bf16; 4 tensors
    // in each of 4 layers, one micro-batch in flight: the peak is the forward's end (a layer reloaded
    // in backward holds less than all four kept).
    const tensor = 2048 * 8 * 128 * 2;
    expect(none.memory.activationBytes - off.memory.activationBytes).toBe(4 * 4 * tensor);
    // What falls under --min-offloaded-tensor-size stays.
    const small = await projectStep(offload('core_attn attn_proj', { minTensorElements: 1 << 30 }), h100);
    expect(small.memory.totalBytes).toBe(none.memory.totalBytes);
    // Half the groups, half the bytes.
    const half = await projectStep(offload('core_attn attn_proj', { fraction: 0.5 }), h100);
    expect(none.memory.activationBytes - half.memory.activationBytes).toBe(4 * 2 * tensor);
  });

  it('hides the copies under the pass; shows what the host link cannot move in that time', () => {
    const tensors: OffloadTensor[] = [{ module: 'qkv_linear', elements: 1 << 21, bytes: 1 << 22 }];
    const o: ActivationOffload = { modules: ['qkv_linear'], fraction: 1, minTensorElements: 1 << 20 };
    const sys = systems['dgx-h100'];
    const copyMs = (1 << 22) / (sys.host!.linkGBps * 1e6);
    expect(layerOffload(tensors, o, sys, 10, 20)).toEqual({
      bytes: 1 << 22,
      exposedForwardMs: 0,
      exposedBackwardMs: 0,
    });
    const tight = layerOffload(tensors, o, sys, copyMs / 4, copyMs / 2);
    expect(tight.exposedForwardMs).toBeCloseTo((3 * copyMs) / 4, 12);
    expect(tight.exposedBackwardMs).toBeCloseTo(copyMs / 2, 12);
  });

  it('refuses what Megatron refuses, with its line, and what is not priced', async () => {
    expect(() => parseOffloadModules('core_attn mlp')).toThrow(/"mlp".*1863-1867/);
    await expect(projectStep(offload('attn_proj'), h100)).rejects.toThrow(/1868-1873/);
    await expect(projectStep(offload('core_attn', { fraction: 2 }), h100)).rejects.toThrow(/1888-1890/);
    const moe = { experts: 8, topk: 2, ffn: 5632, ep: 4, dispatcher: 'alltoall' as const, groupedGemm: true };
    await expect(
      projectStep(
        {
          ...offload('moe_act'),
          distributedOptimizer: true,
          moe: {
            layerFreq: 1,
            auxLossCoeff: 0,
            etp: 2,
            overlapEpComm: false,
            sharedExpertOverlap: false,
            imbalance: 1,
            ...moe,
          },
          recomputation: { granularity: 'selective', modules: ['moe'] },
        },
        h100,
      ),
    ).rejects.toThrow(/1874-1884/);
    await expect(projectStep({ ...offload('core_attn'), recompute: true }, h100)).rejects.toThrow(/not priced/);
  });
});
