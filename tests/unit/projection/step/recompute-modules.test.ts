import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import { moeDefaults } from '../../../../src/megatron/moe.ts';
import { parseRecomputeModules, recomputeModuleRefusals } from '../../../../src/megatron/recompute-modules.ts';
import type { RecomputeModule } from '../../../../src/megatron/recompute-modules.ts';
import type { TrainingSetup } from '../../../../src/megatron/training-setup.ts';
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

  it("Megatron's refusals and the modules not priced are named", async () => {
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
    await expect(projectStep(selective(['moe']), h100)).rejects.toThrow(/not priced yet/);
  });
});
