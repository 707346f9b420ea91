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

const model: ClusterModel = {
  sizes: { s: 1024, h: 1024, heads: 8, groups: 8, ffn: 2816, vocab: 32000 },
  layers: 4,
  moe: { ...moeDefaults(8, 2816), topk: 2, dispatcher: 'alltoall', groupedGemm: true },
};
const plain: ParallelLayout = {
  tp: 1,
  pp: 1,
  vpp: 1,
  cp: 1,
  microBatch: 1,
  sp: false,
  recompute: 'none',
  distributedOptimizer: true,
  overlapGradReduce: false,
  overlapParamGather: false,
  tpCommOverlap: false,
  ep: 8,
  etp: 1,
};

describe('the advisor with MoE', () => {
  it('searches EP over the divisors of E and ETP ∈ {1, t}, one layout for both at t = 1', () => {
    const space = defaultSearchSpace(systems['dgx-h100'], 4, model.moe);
    expect(space.ep).toEqual([1, 2, 4, 8]);
    expect(space.etp).toEqual([1, 't']);
    const small: SearchSpace = {
      ...space,
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
      tp: [1],
      pp: [1],
      vpp: [1],
      cp: [1],
      microBatch: [1],
      sp: [false],
      recompute: ['none'],
      distributedOptimizer: [true],
      overlapGradReduce: [true],
      overlapParamGather: [false],
      tpCommOverlap: [false],
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
});
