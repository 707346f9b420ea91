import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import { mlaParams, type MlaSetup } from '../../../../src/megatron/mla.ts';
import type { TrainingSetup } from '../../../../src/megatron/training-setup.ts';
import { collectiveTimeUs } from '../../../../src/hardware/interconnect.ts';
import { tpGroupLink } from '../../../../src/projection/layer/projected-layer.ts';
import { projectStep } from '../../../../src/projection/step/cluster-projection.ts';
import { mlaCoreBlock, mlaCpBytes, mlaTpGradElements } from '../../../../src/projection/step/mla-step.ts';
import { layoutSetup } from '../../../../src/projection/studies/layout-setup.ts';

const h100 = { system: systems['dgx-h100'], dtype: 'bf16' as const };
// MHA (groups = heads): MLA refuses GQA. d = h/heads = 128.
const dense: TrainingSetup = {
  sizes: { s: 2048, b: 1, h: 2048, heads: 16, groups: 16, ffn: 5632, vocab: 32000 },
  tp: 2,
  sp: true,
  layers: 4,
  gpus: 8,
  globalBatch: 16,
  overlap: true,
  distributedOptimizer: true,
};
const mla: MlaSetup = {
  qLoraRank: 512,
  kvLoraRank: 256,
  qkHeadDim: 128,
  qkPosEmbHeadDim: 64,
  vHeadDim: 128,
  qkLayernorm: true,
};
const withMla: TrainingSetup = { ...dense, mla };

describe('a step with multi-latent attention', () => {
  it("changes the parameters by MLA's over the dense attention's, per layer and TP rank", async () => {
    const d = await projectStep(dense, h100);
    const m = await projectStep(withMla, h100);
    const { h, heads } = dense.sizes;
    const p = mlaParams(mla, h, heads);
    // The down projections and latent norms are duplicated on both TP ranks; the rest split over t = 2.
    const perRank = p.qDown + p.kvDown + p.norms + (p.qUp + p.kvUp + p.proj) / 2;
    const densePerRank = (4 * h * h) / 2;
    expect(m.stageParams[0]! - d.stageParams[0]!).toBe(dense.layers * (perRank - densePerRank));
  });

  it('counts the model FLOPs of its GEMMs and its wider attention', async () => {
    const d = await projectStep(dense, h100);
    const m = await projectStep(withMla, h100);
    const { s, h, heads } = dense.sizes;
    const p = mlaParams(mla, h, heads);
    const perSeq = (w: number, qk: number, v: number): number => 3 * (2 * s * w + 2 * s * s * heads * (qk + v));
    const delta = perSeq(p.total - p.norms, 192, 128) - perSeq(4 * h * h, 128, 128);
    expect(m.modelFlopsPerStep - d.modelFlopsPerStep).toBeCloseTo(dense.layers * dense.globalBatch * delta, -6);
  });

  it('with --recompute-modules mla_up_proj keeps less and runs the up projections again', async () => {
    const sel = (modules: ('core_attn' | 'mla_up_proj')[]): TrainingSetup => ({
      ...withMla,
      recomputation: { granularity: 'selective', modules },
    });
    const base = await projectStep(sel(['core_attn']), h100);
    const up = await projectStep(sel(['core_attn', 'mla_up_proj']), h100);
    expect(up.memory.totalBytes).toBeLessThan(base.memory.totalBytes);
    expect(up.stepMs).toBeGreaterThan(base.stepMs);
    await expect(
      projectStep({ ...dense, recomputation: { granularity: 'selective', modules: ['mla_up_proj'] } }, h100),
    ).rejects.toThrow(/mla_up_proj in recompute_modules is only supported with multi_latent_attention/);
  });

  it("sums the duplicated down projections' and latent norms' gradients over TP once a step, in the SP norms' all-reduce", async () => {
    const [d, m] = await Promise.all([projectStep(dense, h100), projectStep(withMla, h100)]);
    // Per layer under SP: h·q_lora + h·(kv_lora + d_rope) + q_lora + kv_lora = 2048·512 + 2048·320 + 768.
    expect(mlaTpGradElements(mla, 2048, 16, 2, true)).toBe(1_704_704);
    // Without SP the replicas agree; only the "q_layernorm" name rule sums q_lora. At t = 1 nothing.
    expect(mlaTpGradElements(mla, 2048, 16, 2, false)).toBe(512);
    expect(mlaTpGradElements(mla, 2048, 16, 1, true)).toBe(0);
    const system = h100.system;
    const allReduceMs = (bytes: number): number =>
      (system.collectiveBaseUs + collectiveTimeUs('allReduce', bytes, 2, tpGroupLink(system, 2))) / 1e3;
    // The SP norms g1, g2: 4 layers × 2h fp32 main_grads (finalize.ts); MLA adds 4 × 1,704,704 more.
    const norms = 4 * 2 * 2048 * 4;
    expect(d.finalizeMs).toBeCloseTo(allReduceMs(norms), 9);
    expect(m.finalizeMs).toBeCloseTo(allReduceMs(norms + 4 * 1_704_704 * 4), 9);
  });

  it("refuses GQA with Megatron's line", async () => {
    await expect(projectStep({ ...withMla, sizes: { ...dense.sizes, groups: 4 } }, h100)).rejects.toThrow(
      /mutually exclusive.*arguments\.py:1892-1893/,
    );
  });

  it('with context parallelism the ring moves the up-projected K [s/cp, n/t, d_q] and V [s/cp, n/t, d_v] per head', async () => {
    const [one, two] = await Promise.all([projectStep(withMla, h100), projectStep({ ...withMla, cp: 2 }, h100)]);
    // t 2, cp 2: s/cp = 1024 rows of 16/2 = 8 heads; d_q = 128 + 64, d_v = 128; bf16.
    expect(two.mla!.shapes.seq).toBe(1024);
    expect(mlaCpBytes(two.mla!.shapes, 2)).toEqual({ q: 1024 * 8 * 192 * 2, kv: 1024 * 8 * (192 + 128) * 2 });
    // The dense ring's K and V at d = 128 would be 1024·8·2·128·2 bytes: MLA's is 320/256 of it.
    expect(mlaCpBytes(two.mla!.shapes, 2).kv / (1024 * 8 * 2 * 128 * 2)).toBe(1.25);
    // One ring step of MLA's core attention is its forward term at s/cp.
    const block = mlaCoreBlock(two.mla!);
    expect(block.forwardMs).toBeGreaterThan(0);
    expect(two.stepMs).toBeGreaterThan(0);
    expect(two.modelFlopsPerStep).toBeCloseTo(one.modelFlopsPerStep, -6);
  });

  it('reaches the advisor through its setup extras, a layout with cp > 1 included', () => {
    const { b: _b, ...sizes } = dense.sizes;
    const layout = {
      tp: 2,
      pp: 1,
      vpp: 1,
      cp: 1,
      microBatch: 1,
      sp: true,
      recompute: 'none' as const,
      distributedOptimizer: true,
      overlapGradReduce: false,
      overlapParamGather: false,
      tpCommOverlap: false,
    };
    const model = { sizes, layers: dense.layers };
    expect(layoutSetup(model, layout, 8, 16, { mla }).setup.mla).toEqual(mla);
    expect(layoutSetup(model, { ...layout, cp: 2 }, 8, 16, { mla }).unexpressed).toEqual([]);
  });
});
