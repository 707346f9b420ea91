import { describe, expect, it } from 'vitest';
import { systems } from '../../../src/model/systems.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { makePlan } from '../../../src/parallel/plan.ts';
import type { LayerPlan, OpPhase } from '../../../src/parallel/plan-types.ts';
import { isPerStep, projectOps } from '../../../src/trace/projected-layer.ts';

const box = { system: systems['v100-pcie-8'], dtype: 'fp16' as const };

/**
 * The projection reads phases from the plan: ops of a finalize phase (Megatron's
 * finalize_model_grads, e.g. the SP norm-gradient all-reduce) are taken out of the micro-batch
 * and added once per step. Today's plan runs them in backward; this relabels them to check the
 * path a finalize phase takes.
 */
describe('plan phases in the projection', () => {
  it('takes finalize-phase collectives out of every micro-batch', async () => {
    const { plan } = await makePlan({ ...configFromPreset('llama-gqa'), tp: 2, sp: true });
    const norm = plan.ops.filter((o) => o.kind === 'collective' && o.collective?.payloadBytes === plan.config.h * 4);
    expect(norm.length).toBeGreaterThan(0);
    const relabel: LayerPlan = {
      ...plan,
      ops: plan.ops.map((o) => (norm.includes(o) ? { ...o, phase: 'finalize' as unknown as OpPhase } : o)),
    };
    const before = projectOps(plan, box);
    const after = projectOps(relabel, box);
    for (const o of norm) {
      expect(before.commMs[0]![o.index]).toBeGreaterThan(0);
      expect(isPerStep(relabel.ops[o.index]!)).toBe(true);
      expect(after.commMs[0]![o.index]).toBe(0);
    }
  });
});
