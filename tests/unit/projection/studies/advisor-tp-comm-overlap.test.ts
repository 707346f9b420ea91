import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import type { ClusterModel } from '../../../../src/megatron/parallel-layout.ts';
import { advise } from '../../../../src/projection/studies/advisor.ts';
import type { SearchSpace } from '../../../../src/projection/studies/advisor-space.ts';
import { projectStep } from '../../../../src/projection/step/cluster-projection.ts';
import { defaultKernelOptions } from '../../../../src/projection/layer/kernel-options.ts';
import { layoutSetup } from '../../../../src/projection/studies/layout-setup.ts';

/** A small Llama on one DGX H100, bf16, global batch 16. */
const model: ClusterModel = {
  sizes: { s: 2048, h: 2048, heads: 16, groups: 16, ffn: 5632, vocab: 32000 },
  layers: 8,
};
const machine = { system: systems['dgx-h100'], dtype: 'bf16' as const, kernels: defaultKernelOptions };
const space: SearchSpace = {
  tp: [2, 4],
  pp: [1],
  vpp: [1],
  cp: [1],
  microBatch: [1],
  sp: [false, true],
  recompute: ['none'],
  distributedOptimizer: [false],
  overlapGradReduce: [false],
  overlapParamGather: [false],
  tpCommOverlap: [false, true],
};

describe('the advisor and --tp-comm-overlap', () => {
  it('searches --tp-comm-overlap layouts with the kernel option per candidate, each as projectStep prices it', async () => {
    const r = await advise({ model, machine, gpus: 8, globalBatch: 16 }, space, { k: 8 });
    // t ∈ {2, 4} × SP × TP overlap: the two TP overlap layouts without SP break Megatron's rule; none is unexpressed.
    expect(r.candidates).toBe(8);
    expect(r.rejected['flag-needs']).toBe(2);
    expect(r.rejected.unexpressed).toBe(0);
    expect(r.ranked).toBe(6);
    const overlapped = r.top.filter((x) => x.layout.tpCommOverlap);
    expect(overlapped.map((x) => x.layout.tp).sort()).toEqual([2, 4]);
    for (const row of r.top) {
      const laid = layoutSetup(model, row.layout, 8, 16);
      const want = await projectStep(laid.setup, {
        ...machine,
        kernels: { ...defaultKernelOptions, tpCommOverlap: laid.tpCommOverlap },
      });
      expect(row.stepMs).toBe(want.stepMs);
      expect(row.memoryGiB).toBe(want.memory.totalBytes / 2 ** 30);
    }
    // At each t the overlapped layout differs from the same layout without it (the option reached the kernels).
    for (const t of [2, 4]) {
      const sp = r.top.filter((x) => x.layout.tp === t && x.layout.sp);
      expect(sp).toHaveLength(2);
      expect(sp[0]!.stepMs).not.toBe(sp[1]!.stepMs);
    }
  });
});
