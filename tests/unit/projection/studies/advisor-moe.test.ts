import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import { moeDefaults } from '../../../../src/megatron/moe.ts';
import {
  layoutFlags,
  layoutRejection,
  type ClusterModel,
  type ParallelLayout,
} from '../../../../src/megatron/parallel-layout.ts';
import { advise } from '../../../../src/projection/studies/advisor.ts';
import {
  defaultSearchSpace,
  enumerateLayouts,
  spaceSize,
  type SearchSpace,
} from '../../../../src/projection/studies/advisor-space.ts';
import { layoutSetup } from '../../../../src/projection/studies/layout-setup.ts';
import { plainLayout } from '../../../layout-fixtures.ts';

const model: ClusterModel = {
  sizes: { s: 1024, h: 1024, heads: 8, groups: 8, ffn: 2816, vocab: 32000 },
  layers: 4,
  moe: { ...moeDefaults(8, 2816), topk: 2, dispatcher: 'alltoall', groupedGemm: true },
};
const plain: ParallelLayout = plainLayout({ distributedOptimizer: true, ep: 8, etp: 1 });

/** One dense layout (t = p = v = cp = b = 1, no SP, the distributed optimizer, no overlaps) under the MoE dimensions. */
const oneDense = {
  tp: [1],
  pp: [1],
  vpp: [1],
  cp: [1],
  microBatch: [1],
  sp: [false],
  distributedOptimizer: [true],
  overlapGradReduce: [false],
  overlapParamGather: [false],
  tpCommOverlap: [false],
} satisfies Partial<SearchSpace>;

describe('the advisor with MoE', () => {
  it('searches EP over the divisors of E and ETP ∈ {1, t}, one layout for both at t = 1', () => {
    const space = defaultSearchSpace(systems['dgx-h100'], 4, model.moe);
    expect(space.ep).toEqual([1, 2, 4, 8]);
    expect(space.etp).toEqual([1, 't']);
    // Megatron-FSDP's full sharding beside none; FSDP2 with EP > 1 is Megatron's refusal.
    expect(space.fsdp).toEqual(['none', { impl: 'megatron', strategy: 'optim_grads_params' }]);
    const small: SearchSpace = {
      ...space,
      fsdp: ['none'],
      tp: [1, 2],
      pp: [1],
      vpp: [1],
      cp: [1],
      microBatch: [1],
      sp: [true],
      recompute: ['none'],
      distributedOptimizer: [true],
      overlapGradReduce: [false],
      overlapParamGather: [false],
      tpCommOverlap: [false],
    };
    const layouts = [...enumerateLayouts(small)];
    expect(spaceSize(small)).toBe(2 * 4 * 2);
    expect(layouts.length).toBe(4 + 2 * 4); // t = 1: ETP 1 only; t = 2: ETP 1 and 2
    expect(layouts.filter((l) => l.tp === 2).map((l) => l.etp)).toContain(2);
    expect(defaultSearchSpace(systems['dgx-h100'], 4).ep).toBeUndefined();
  });
  it("rejects a layout Megatron's MoE rules refuse, and writes EP and ETP as flags", () => {
    expect(layoutRejection(model, plain, 8, 8)).toBeUndefined();
    expect(layoutRejection(model, { ...plain, ep: 3 }, 9, 9)).toBe('moe');
    expect(layoutRejection(model, { ...plain, ep: 8, etp: 2, tp: 2, sp: true }, 8, 4)).toBe('moe'); // 2·8 ∤ 8
    expect(layoutFlags({ ...plain, tp: 2, etp: 1 })).toContain('--expert-tensor-parallel-size 1');
    expect(layoutFlags(plain)).toContain('--expert-model-parallel-size 8');
    expect(layoutSetup(model, { ...plain, ep: 4 }, 8, 8).setup.moe).toMatchObject({ ep: 4, etp: 1, experts: 8 });
  });
  it('ranks MoE layouts by their projected step', async () => {
    const space: SearchSpace = {
      ...defaultSearchSpace(systems['dgx-h100'], 4, model.moe),
      ...oneDense,
      recompute: ['none'],
      overlapGradReduce: [true],
    };
    const r = await advise(
      { model, machine: { system: systems['dgx-h100'], dtype: 'bf16' }, gpus: 8, globalBatch: 8 },
      space,
      { k: 4 },
    );
    expect(r.top.length).toBe(4);
    expect(new Set(r.top.map((x) => x.layout.ep)).size).toBe(4);
    for (let i = 1; i < r.top.length; i++) expect(r.top[i]!.stepMs).toBeGreaterThanOrEqual(r.top[i - 1]!.stepMs);
  }, 30_000);
  it('tries each MoE recompute module list with selective recompute, and writes it as --recompute-modules', async () => {
    const space = defaultSearchSpace(systems['dgx-h100'], 4, model.moe);
    expect(space.recomputeModules).toEqual([['core_attn'], ['core_attn', 'moe_act'], ['core_attn', 'moe']]);
    const small: SearchSpace = {
      ...space,
      ...oneDense,
      recompute: ['none', 'selective', 'full'],
      ep: [8],
      etp: [1],
      fsdp: ['none'],
    };
    const layouts = [...enumerateLayouts(small)];
    expect(layouts.length).toBe(spaceSize(small));
    expect(layouts.length).toBe(1 + 3 + 1);
    const moeAct = layouts.find((l) => l.recomputeModules?.includes('moe_act'))!;
    expect(layoutFlags(moeAct)).toContain('--recompute-modules core_attn moe_act');
    expect(layoutSetup(model, moeAct, 8, 8).setup.recomputation).toEqual({
      granularity: 'selective',
      modules: ['core_attn', 'moe_act'],
    });
    const r = await advise(
      { model, machine: { system: systems['dgx-h100'], dtype: 'bf16' }, gpus: 8, globalBatch: 8 },
      { ...small, recompute: ['selective'] },
      { k: 3 },
    );
    // Recomputing more never lowers the step or raises the memory.
    const by = (m: string) => r.top.find((x) => x.layout.recomputeModules?.at(-1) === m)!;
    expect(by('moe').stepMs).toBeGreaterThan(by('moe_act').stepMs);
    expect(by('moe_act').stepMs).toBeGreaterThan(by('core_attn').stepMs);
    expect(by('moe').memoryGiB).toBeLessThan(by('moe_act').memoryGiB);
    expect(by('moe_act').memoryGiB).toBeLessThan(by('core_attn').memoryGiB);
    expect(defaultSearchSpace(systems['dgx-h100'], 4, { ...model.moe!, groupedGemm: false }).recomputeModules).toEqual([
      ['core_attn'],
      ['core_attn', 'moe'],
    ]);
  }, 30_000);
  it('prices Megatron-FSDP rows of a MoE model beside the DDP ones (experts sharded over expert-DP)', async () => {
    const space = defaultSearchSpace(systems['dgx-h100'], 4, model.moe);
    // Megatron-FSDP's full sharding turns both DP overlaps on itself (advisor-space.ts), so both are on here.
    const small: SearchSpace = {
      ...space,
      ...oneDense,
      overlapGradReduce: [true],
      overlapParamGather: [true],
      recompute: ['none'],
      ep: [8],
      etp: [1],
    };
    const r = await advise(
      { model, machine: { system: systems['dgx-h100'], dtype: 'bf16' }, gpus: 8, globalBatch: 8 },
      small,
      { k: 4 },
    );
    const fsdp = r.top.filter((x) => x.layout.fsdp !== undefined);
    expect(fsdp.length).toBe(1);
    expect(fsdp[0]!.layout.fsdp).toEqual({ impl: 'megatron', strategy: 'optim_grads_params' });
    // Sharding parameters and gradients over the 8 ranks holds less than the distributed optimizer alone.
    const ddp = r.top.find((x) => x.layout.fsdp === undefined)!;
    expect(fsdp[0]!.memoryGiB).toBeLessThan(ddp.memoryGiB);
  }, 30_000);
});
