import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import { moeDefaults } from '../../../../src/megatron/moe.ts';
import { parseRecomputeModules, recomputeModuleRefusals } from '../../../../src/megatron/recompute-modules.ts';
import type { RecomputeModule } from '../../../../src/megatron/recompute-modules.ts';
import type { TrainingSetup } from '../../../../src/megatron/training-setup.ts';
import { defaultKernelOptions } from '../../../../src/projection/layer/kernel-options.ts';
import { projectStep } from '../../../../src/projection/step/cluster-projection.ts';

const h100 = { system: systems['dgx-h100'], dtype: 'bf16' as const };
const sizes = { s: 2048, b: 1, h: 2048, heads: 16, groups: 4, ffn: 5632, vocab: 32000 };
const base: TrainingSetup = { sizes, tp: 2, sp: false, layers: 4, gpus: 8, globalBatch: 8, overlap: true };
const selective = (modules?: RecomputeModule[], more: Partial<TrainingSetup> = {}): TrainingSetup => ({
  ...base,
  recomputation: { granularity: 'selective', ...(modules && { modules }) },
  ...more,
});

describe('--recompute-modules (transformer_config.py:546-562, core_v0.19.0)', () => {
  it('mlp runs each dense MLP forward again: executed FLOPs grow by exactly L·m·DP·6·s·b·h·F', async () => {
    const attn = await projectStep(selective(), h100);
    const mlp = await projectStep(selective(['core_attn', 'mlp']), h100);
    const dp = 4;
    const m = 8 / (sizes.b * dp);
    const extra = base.layers * m * dp * 6 * sizes.s * sizes.b * sizes.h * sizes.ffn;
    expect(mlp.executedFlopsPerStep - attn.executedFlopsPerStep).toBeCloseTo(extra, -3);
    expect(mlp.modelFlopsPerStep).toBe(attn.modelFlopsPerStep);
    expect(mlp.stepMs).toBeGreaterThan(attn.stepMs);
    expect(mlp.memory.activationBytes).toBeLessThan(attn.memory.activationBytes);
  });

  it('layernorm drops the norms’ outputs on the local spec, and nothing under SP (norms fused into the linears)', async () => {
    const none = await projectStep(selective(['core_attn']), h100);
    const ln = await projectStep(selective(['core_attn', 'layernorm']), h100);
    // Two [s, b, h] bf16 outputs per layer, 4 layers, the one micro-batch in flight (p = 1).
    expect(none.memory.activationBytes - ln.memory.activationBytes).toBeCloseTo(4 * 2 * 2048 * 2048 * 2, -3);
    const sp = await projectStep(selective(['core_attn'], { sp: true }), h100);
    const spLn = await projectStep(selective(['core_attn', 'layernorm'], { sp: true }), h100);
    expect([spLn.memory.totalBytes, spLn.stepMs]).toEqual([sp.memory.totalBytes, sp.stepMs]);
  });

  it('mlp leaves MoE layers alone (transformer_layer.py:512-514)', async () => {
    const moe = { ...moeDefaults(8, 5632), topk: 2, ep: 4, dispatcher: 'alltoall' as const, groupedGemm: true };
    const a = await projectStep(selective(['core_attn'], { moe, distributedOptimizer: true, sp: true }), h100);
    const b = await projectStep(selective(['core_attn', 'mlp'], { moe, distributedOptimizer: true, sp: true }), h100);
    expect([b.memory.totalBytes, b.executedFlopsPerStep]).toEqual([a.memory.totalBytes, a.executedFlopsPerStep]);
  });

  it("Megatron's refusals are named with their lines", async () => {
    expect(() => parseRecomputeModules('core_attn attention')).toThrow(/"attention".*core_attn, mlp, layernorm/);
    expect(parseRecomputeModules('core_attn,mlp mlp')).toEqual(['core_attn', 'mlp']);
    const sources = (m: RecomputeModule[], job: Parameters<typeof recomputeModuleRefusals>[1]) =>
      recomputeModuleRefusals(m, job).map((r) =>
        r.source.replace('megatron/core/transformer/transformer_config.py', 'TC'),
      );
    expect(sources(['moe_act'], { moe: { groupedGemm: false, sharedExpertOverlap: false }, mla: false })).toEqual([
      'TC:1784-1787',
    ]);
    expect(sources(['moe_act'], { moe: { groupedGemm: true, sharedExpertOverlap: false }, mla: false })).toEqual([]);
    expect(sources(['mla_up_proj'], { mla: false })).toEqual(['TC:1789-1793']);
    expect(
      sources(['shared_experts'], {
        moe: { groupedGemm: true, sharedFfn: 1024, sharedExpertOverlap: true },
        mla: false,
      }),
    ).toEqual(['TC:1812-1818']);
    expect(sources(['layernorm'], { mla: false, fp8Recipe: 'delayed' })).toEqual(['TC:1821-1827']);
    expect(sources(['layernorm', 'moe_act'], { mla: false, fp8Recipe: 'tensorwise' })).toEqual(['TC:1784-1787']);
    const fp8 = (recipe?: 'tensorwise') => ({
      ...h100,
      kernels: { ...defaultKernelOptions, fp8: 'hybrid' as const, ...(recipe && { fp8Recipe: recipe }) },
    });
    await expect(projectStep(selective(['layernorm']), fp8())).rejects.toThrow(/Delayed scaling.*1821-1827/);
    await expect(projectStep(selective(['layernorm']), fp8('tensorwise'))).resolves.toBeDefined();
  });
});

describe('--recompute-modules moe, moe_act, shared_experts (moe_layer.py, experts.py, core_v0.19.0)', () => {
  // T = s·b/t = 1024 tokens per rank under SP, k = 2, ETP = t = 2: 4,096 routed rows after the ETP gather.
  const moe = { ...moeDefaults(8, 5632), topk: 2, ep: 4, dispatcher: 'alltoall' as const, groupedGemm: true };
  const withMoe = (modules: RecomputeModule[], sharedFfn = 2816) =>
    selective(['core_attn', ...modules], {
      moe: { ...moe, ...(sharedFfn > 0 && { sharedFfn }) },
      sp: true,
      distributedOptimizer: true,
    });
  const m = 2; // global batch 8 over DP 4
  const layersTimesM = base.layers * m;

  it('moe_act drops the activation output of every routed row (F/ETP each) and runs the activation again', async () => {
    const a = await projectStep(withMoe([]), h100);
    const b = await projectStep(withMoe(['moe_act']), h100);
    const dropped = 1024 * 2 * 2 * (5632 / 2) * 2;
    expect(a.moe!.model.recompute.moeAct.droppedBytes).toBe(dropped);
    // p = 1: the one micro-batch in flight keeps 4 layers of it.
    expect(a.memory.activationBytes - b.memory.activationBytes).toBe(base.layers * dropped);
    expect(b.stepMs - a.stepMs).toBeCloseTo(layersTimesM * a.moe!.model.recompute.moeAct.redoMs, 9);
    expect(b.executedFlopsPerStep).toBe(a.executedFlopsPerStep);
  });

  it('shared_experts drops their fc1 and activation outputs and runs their forward GEMMs again', async () => {
    const a = await projectStep(withMoe([]), h100);
    const b = await projectStep(withMoe(['shared_experts']), h100);
    // T·t rows of fc1's 2·F_s/t and the activation's F_s/t, bf16.
    const dropped = 1024 * 2 * 3 * (2816 / 2) * 2;
    expect(a.memory.activationBytes - b.memory.activationBytes).toBe(base.layers * dropped);
    const forward = 2 * 2048 * 3 * sizes.h * 2816;
    expect(b.executedFlopsPerStep - a.executedFlopsPerStep).toBeCloseTo(layersTimesM * 4 * forward, -3);
    expect(b.modelFlopsPerStep).toBe(a.modelFlopsPerStep);
    // Without shared experts the module has nothing to recompute (Megatron accepts it).
    const none = await projectStep(withMoe([], 0), h100);
    const noneShared = await projectStep(withMoe(['shared_experts'], 0), h100);
    expect([noneShared.stepMs, noneShared.memory.totalBytes]).toEqual([none.stepMs, none.memory.totalBytes]);
  });

  it('moe drops everything the MoE layer keeps, runs its whole forward again; moe_act nested adds time, not bytes', async () => {
    const a = await projectStep(withMoe([]), h100);
    const b = await projectStep(withMoe(['moe']), h100);
    const r = a.moe!.model.recompute;
    const x = a.moe!.model;
    expect(r.moe.redoMs).toBe(x.forwardMs);
    expect(r.moe.droppedBytes).toBeGreaterThan(r.moeAct.droppedBytes + r.sharedExperts.droppedBytes);
    // Four layers no longer kept, one held again while its backward runs.
    const saved = a.memory.activationBytes - b.memory.activationBytes;
    expect(saved).toBeGreaterThanOrEqual(3 * r.moe.droppedBytes);
    expect(saved).toBeLessThanOrEqual(4 * r.moe.droppedBytes);
    expect(b.stepMs - a.stepMs).toBeCloseTo(layersTimesM * r.moe.redoMs, 9);
    expect(b.executedFlopsPerStep - a.executedFlopsPerStep).toBeCloseTo(layersTimesM * 4 * r.moe.redoFlops, -3);
    const nested = await projectStep(withMoe(['moe', 'moe_act']), h100);
    expect(nested.memory.totalBytes).toBe(b.memory.totalBytes);
    expect(nested.stepMs - b.stepMs).toBeCloseTo(layersTimesM * r.moeAct.redoMs, 9);
  });

  it('a dense model takes moe and shared_experts as Megatron does: no MoE layer, nothing changes', async () => {
    const a = await projectStep(selective(['core_attn']), h100);
    const b = await projectStep(selective(['core_attn', 'moe', 'shared_experts']), h100);
    expect([b.stepMs, b.memory.totalBytes]).toEqual([a.stepMs, a.memory.totalBytes]);
  });
});
