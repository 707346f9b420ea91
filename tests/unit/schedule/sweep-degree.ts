import type { LayerPlan, PlannedOp } from '../../../src/parallel/plan-types.ts';
import type { SweepDegree } from '../../../src/schedule/sweep-degree.ts';
import { sweepGemms } from '../../../src/session/sweep.ts';

/**
 * A sweep degree from a real plan with made-up times: `gemmMs(op)` per GEMM, and a step of
 * `computeMs` compute, `commMs` communication of which `exposedMs` exposed, on every rank.
 */
export function sweepDegree(
  plan: LayerPlan,
  gemmMs: (op: PlannedOp) => number,
  step: { computeMs: number; commMs: number; exposedMs: number },
): SweepDegree {
  const ranks = plan.ranks.map(() => 0);
  const tl = (comm: string, overlap: boolean) => ({
    comm,
    overlap,
    stepMs: step.computeMs + step.exposedMs,
    computeMs: ranks.map(() => step.computeMs),
    commMs: ranks.map(() => step.commMs),
    exposedMs: ranks.map(() => step.exposedMs),
  });
  return {
    config: plan.config,
    transport: 'sab-ring',
    oracle: { pass: true, worst: undefined!, entries: [] },
    timing: { method: 'timestamp-query', quantized: false },
    gemms: sweepGemms(plan, gemmMs),
    collectives: [],
    memory: [],
    computeMs: ranks.map(() => step.computeMs),
    timelines: [
      tl("measured (this machine's transport)", false),
      tl('modeled (pcie-gen3)', false),
      tl('modeled (pcie-gen3)', true),
    ],
  };
}
