import { describe, expect, test } from 'vitest';
import { publishedRuns } from '../../../src/megatron/published-runs.ts';
import { seedsV100 } from '../../../src/megatron/scenarios.ts';
import { maxPipelinePasses, setupConfig, type TrainingSetup } from '../../../src/megatron/training-setup.ts';

describe('setupConfig: the pipeline schedule is capped', () => {
  test('every published run schedules at most the cap of forward passes p·v·m', () => {
    for (const r of publishedRuns) {
      const { tp, pp, vpp, cp, microBatch } = r.layout;
      const m = r.globalBatch / (microBatch * (r.gpus / (tp * pp * cp)));
      expect(pp * vpp * m, r.id).toBeLessThanOrEqual(maxPipelinePasses);
    }
  });

  // seedsV100 at t = 2, p = 4: DP = 1, so m = globalBatch / 8.
  const deep = (globalBatch: number, vpp = 1): TrainingSetup => ({
    ...seedsV100.setup,
    tp: 2,
    pp: 4,
    vpp,
    layers: 16,
    globalBatch,
  });

  test('p·v·m at the cap is taken; one micro-batch more (or twice the virtual stages) is refused saying what to lower', () => {
    const m = maxPipelinePasses / 4;
    expect(() => setupConfig(deep(8 * m))).not.toThrow();
    expect(() => setupConfig(deep(8 * (m + 1)))).toThrow(
      `the pipeline would schedule p·v·m = 4·1·${m + 1} = ${4 * (m + 1)} forward passes per step, more than the projection's maximum of ${maxPipelinePasses}: lower the global batch, p or v.`,
    );
    expect(() => setupConfig(deep(8 * m, 2))).toThrow(/p·v·m = 4·2·32768 = 262144 forward passes/);
    // The hostile link's global batch (4·10⁶ sequences at p = 4 took 47 s and 2.3 GB to project).
    expect(() => setupConfig(deep(4_000_000))).toThrow(/more than the projection's maximum/);
  });
});
