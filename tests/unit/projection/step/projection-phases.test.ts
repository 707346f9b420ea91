import { describe, expect, it } from 'vitest';
import { seedsV100 } from '../../../../src/megatron/scenarios.ts';
import { systems } from '../../../../src/hardware/systems.ts';
import { configFromPreset } from '../../../../src/parallel/config.ts';
import { makePlan } from '../../../../src/parallel/plan.ts';
import { projectStep } from '../../../../src/projection/step/cluster-projection.ts';
import { isPerStep, projectOps } from '../../../../src/projection/layer/projected-layer.ts';

const box = { system: systems['v100-pcie-8'], dtype: 'fp16' as const };

/**
 * The projection reads phases from the plan: ops of the finalize phase (Megatron's
 * finalize_model_grads: the SP norm-gradient all-reduce) are taken out of every micro-batch and
 * added once per step, coalesced over the layers.
 */
describe('plan phases in the projection', () => {
  it('takes finalize-phase collectives out of every micro-batch', async () => {
    const { plan } = await makePlan({ ...configFromPreset('llama-gqa'), tp: 2, sp: true });
    const finalize = plan.ops.filter((o) => o.kind === 'collective' && isPerStep(o));
    expect(finalize.length).toBeGreaterThan(0);
    const ops = projectOps(plan, box);
    for (const o of finalize) expect(ops.commMs[0]![o.index]).toBe(0);
  });

  it('adds them once per step under SP, as one coalesced call, and not at all without SP', async () => {
    const sp = await projectStep({ ...seedsV100.setup, tp: 2, sp: true }, box);
    const plain = await projectStep({ ...seedsV100.setup, tp: 2 }, box);
    expect(plain.finalizeMs).toBe(0);
    expect(sp.finalizeMs).toBeGreaterThan(0);
    // One all-reduce of 2·L norm gradients of h fp16 values on 2 ranks: base + 2·(α + S/(2B)).
    const bytes = 2 * seedsV100.setup.layers * seedsV100.setup.sizes.h * 2;
    const link = box.system.intra;
    const oneCall = box.system.collectiveBaseUs + 2 * (link.alphaUs + bytes / 2 / (link.busGBps * 1e3));
    expect(sp.finalizeMs * 1e3).toBeCloseTo(oneCall, 6);
  });
});
