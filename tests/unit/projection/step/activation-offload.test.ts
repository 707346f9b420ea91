import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import { parseOffloadModules, type ActivationOffload } from '../../../../src/megatron/activation-offload.ts';
import type { TrainingSetup } from '../../../../src/megatron/training-setup.ts';
import {
  offloadGroups,
  stageOffload,
  type OffloadGroup,
  type OffloadTensor,
} from '../../../../src/projection/step/activation-offload.ts';
import { projectStep } from '../../../../src/projection/step/cluster-projection.ts';

const h100 = { system: systems['dgx-h100'], dtype: 'bf16' as const };
const sizes = { s: 2048, b: 1, h: 2048, heads: 16, groups: 4, ffn: 5632, vocab: 32000 };
const base: TrainingSetup = { sizes, tp: 2, sp: true, layers: 4, gpus: 8, globalBatch: 8, overlap: true };
const offload = (modules: string, more: Partial<ActivationOffload> = {}): TrainingSetup => ({
  ...base,
  activationOffload: {
    modules: parseOffloadModules(modules),
    fraction: 1,
    minTensorElements: 1 << 20,
    deltaBytesPerPpRank: 0,
    ...more,
  },
});

describe('--fine-grained-activation-offloading (transformer_config.py:1229-1265, core_v0.19.0)', () => {
  it("takes the modules' inputs off the GPU: core_attn Q, K, V and attn_proj's context, [s, b, n/t·d] each", async () => {
    const none = await projectStep(base, h100);
    const off = await projectStep(offload('core_attn attn_proj'), h100);
    // 8 query heads (K and V repeated to them without flash attention) × d 128 × s 2048, bf16; 4 tensors
    // in each of 4 layers, one micro-batch in flight (p 1: the peak is the forward's end). Without a
    // pipeline each micro-batch's backward follows its forward, so the last layer's core_attn and
    // attn_proj groups stay (should_bulk_offload): 3 layers' 4 tensors leave.
    const tensor = 2048 * 8 * 128 * 2;
    expect(none.memory.activationBytes - off.memory.activationBytes).toBe(3 * 4 * tensor);
    // What falls under --min-offloaded-tensor-size stays.
    const small = await projectStep(offload('core_attn attn_proj', { minTensorElements: 1 << 30 }), h100);
    expect(small.memory.totalBytes).toBe(none.memory.totalBytes);
    // f 0.5 over groups, not bytes: micro-batch 0 (the margin's) has 6 groups left of 8 and keeps the
    // last ⌊6·0.5⌋ = 3 (layer 2's two, layer 1's attn_proj): layer 0's core_attn and attn_proj and
    // layer 1's core_attn leave, 3 + 1 + 3 tensors. Micro-batch 1 offloads 8 (its 8 groups less 4),
    // so micro-batch 0 sets the peak.
    const half = await projectStep(offload('core_attn attn_proj', { fraction: 0.5 }), h100);
    expect(none.memory.activationBytes - half.memory.activationBytes).toBe(7 * tensor);
  });

  const sys = systems['dgx-h100'];
  const ms = (bytes: number): number => bytes / (sys.host!.linkGBps * 1e6);
  const oneOf = (o: Partial<ActivationOffload>): ActivationOffload => ({
    modules: ['qkv_linear', 'core_attn', 'expert_fc1'],
    fraction: 1,
    minTensorElements: 0,
    deltaBytesPerPpRank: 0,
    ...o,
  });
  const dense: OffloadGroup[] = [
    { module: 'qkv_linear', bytes: 10 },
    { module: 'core_attn', bytes: 30 },
  ];
  const moe: OffloadGroup[] = [{ module: 'expert_fc1', bytes: 100 }];
  const still = { dense: { forwardMs: 1, backwardMs: 1 }, moe: { forwardMs: 1, backwardMs: 1 } };

  it('merges a module’s tensors into its group and drops what falls under the minimum size', () => {
    const t = (module: OffloadTensor['module'], elements: number): OffloadTensor => ({
      module,
      elements,
      bytes: 2 * elements,
    });
    const tensors = [t('qkv_linear', 4), t('core_attn', 8), t('core_attn', 2), t('core_attn', 2), t('attn_proj', 8)];
    expect(offloadGroups(tensors, oneOf({ modules: ['core_attn', 'attn_proj'], minTensorElements: 4 }))).toEqual([
      { module: 'core_attn', bytes: 16 },
      { module: 'attn_proj', bytes: 16 },
    ]);
  });

  it('keeps the last-group margin and i·Δ bytes on pipeline rank i (fine_grained_activation_offload.py:579-607)', () => {
    // Rank 1 of 3, 4 micro-batches, one chunk of 3 layers, the last a MoE layer: per micro-batch
    // L0 q10 c30, L1 q10 c30, L2 q10 c30 e100 = 220 bytes. Micro-batch 0 runs backward first: the
    // margin keeps L2's three groups; Δ 50 then keeps L0 q10, L0 c30, L1 q10 (50 reached) → 30 leave.
    const r1 = stageOffload(
      { stage: 1, stages: 3, microBatches: 4, layers: [3], moeLayers: [1] },
      { dense, moe },
      oneOf({ deltaBytesPerPpRank: 50 }),
      sys,
      still,
    );
    expect([0, 1, 2, 3].map((mb) => r1.offloadedBytes(0, mb))).toEqual([30, 220, 220, 220]);
    expect(r1.maxOffloadedBytes).toEqual([220]);
    expect(r1.reloadBytes).toEqual([140]);
    // The last rank: i·Δ = 100. Micro-batch 0: margin L2, then L0 and L1 (80 bytes; 20 left); micro-batch 1:
    // L0 q10, c30 (now −20), and the run-time rule keeps L2 (its backward follows its forward) → L1's 40.
    const r2 = stageOffload(
      { stage: 2, stages: 3, microBatches: 4, layers: [3], moeLayers: [1] },
      { dense, moe },
      oneOf({ deltaBytesPerPpRank: 50 }),
      sys,
      still,
    );
    expect([0, 1, 2, 3].map((mb) => r2.offloadedBytes(0, mb))).toEqual([0, 40, 80, 80]);
  });

  it('walks interleaved chunks in the backward order: each group of p micro-batches, last chunk first', () => {
    // p 2, v 2, last rank, one core_attn group of 10 per chunk. Backward order (1,0) (1,1) (0,0) (0,1) (1,2)…
    // Δ 25: (1,0)'s group is the margin's; (1,1), (0,0), (0,1) take 30 ≥ 25. Chunk 1 keeps its group in every
    // micro-batch anyway (the run-time rule, after Δ). In the order (0,0) (0,1) (0,2) Δ would keep three of chunk 0.
    const r = stageOffload(
      { stage: 1, stages: 2, microBatches: 4, layers: [1, 1], moeLayers: [0, 0] },
      { dense: [{ module: 'core_attn', bytes: 10 }], moe: [] },
      oneOf({ deltaBytesPerPpRank: 25 }),
      sys,
      still,
    );
    expect([0, 1, 2, 3].map((mb) => r.offloadedBytes(0, mb))).toEqual([0, 0, 10, 10]);
    expect([0, 1, 2, 3].map((mb) => r.offloadedBytes(1, mb))).toEqual([0, 0, 0, 0]);
  });

  it('hides the copies under the pass; shows what the host link cannot move in that time, the mean over micro-batches', () => {
    // Rank 1 of 3 as above, Δ 50. Dense groups hide under a forward of ms(20), the MoE part under ms(50):
    // a plain micro-batch exposes ms(40 − 20) in L0 and L1, ms(20) + ms(100 − 50) in L2 = ms(110);
    // micro-batch 0 only L1's c30: ms(10). Mean over 4: ms((10 + 3·110)/4) = ms(85). Backward hides all.
    const r = stageOffload(
      { stage: 1, stages: 3, microBatches: 4, layers: [3], moeLayers: [1] },
      { dense, moe },
      oneOf({ deltaBytesPerPpRank: 50 }),
      sys,
      { dense: { forwardMs: ms(20), backwardMs: ms(40) }, moe: { forwardMs: ms(50), backwardMs: ms(100) } },
    );
    expect(r.exposedForwardMs[0]).toBeCloseTo(ms(85), 15);
    expect(r.exposedBackwardMs[0]).toBe(0);
  });

  it('keeps micro-batch 0’s extra bytes on the pipeline’s first stage at its peak', async () => {
    // p 2, 4 layers (2 per stage), t 2 SP, m 4: stage 0's peak is micro-batch 0's backward, micro-batches
    // 0 and 1 in flight and one layer's 4 tensors reloaded. Micro-batch 0 keeps its layer 1's core_attn and
    // attn_proj (the margin), micro-batch 1 keeps none: (1 + 2)·4 tensors leave, 4 are back; 12 − 4.
    const pp = { ...base, pp: 2 };
    const tensor = 2048 * 8 * 128 * 2;
    const none = await projectStep(pp, h100);
    const off = await projectStep({ ...offload('core_attn attn_proj'), pp: 2 }, h100);
    const peak = (r: typeof none): number => r.memory.activationBytes;
    expect(peak(none) - peak(off)).toBe((1 + 2 - 1) * 4 * tensor);
    // Δ of one tensor keeps one more group on stage 1 only (rank 0 keeps 0·Δ): the peak (stage 0) does not move.
    const delta = await projectStep(
      { ...offload('core_attn attn_proj', { deltaBytesPerPpRank: tensor }), pp: 2 },
      h100,
    );
    expect(peak(delta)).toBe(peak(off));
  });

  it('refuses what Megatron refuses, with its line, and what is not priced', async () => {
    expect(() => parseOffloadModules('core_attn mlp')).toThrow(/"mlp".*1863-1867/);
    await expect(projectStep(offload('attn_proj'), h100)).rejects.toThrow(/1868-1873/);
    await expect(projectStep(offload('core_attn', { fraction: 2 }), h100)).rejects.toThrow(/1888-1890/);
    await expect(projectStep(offload('core_attn', { deltaBytesPerPpRank: -1 }), h100)).rejects.toThrow(/1891-1893/);
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
