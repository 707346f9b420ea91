import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import { publishedRuns } from '../../../../src/megatron/published-runs.ts';
import { publishedSetup } from '../../../../src/projection/studies/published-comparison.ts';
import { stepBreakdown, type StepTerms } from '../../../../src/projection/studies/step-breakdown.ts';

/** The step's terms, which stepBreakdown says add up to the projected step. */
const termSum = (t: StepTerms): number =>
  t.layersMs +
  t.recomputeMs +
  t.embeddingOutputMs +
  t.bubbleMs +
  t.dpGradMs +
  t.paramGatherMs +
  t.optimizerMs +
  t.finalizeMs;

async function breakdown(id: string): Promise<StepTerms> {
  const run = publishedRuns.find((r) => r.id === id)!;
  const mapped = publishedSetup(run);
  return stepBreakdown(mapped.setup, { system: systems[run.system], dtype: run.dtype, kernels: mapped.kernels });
}

describe('stepBreakdown', () => {
  // Floating-point sums of a few hundred terms: 1e-9 of the step.
  it('cuts a pipelined, recomputed step (A100 39B, t 8 × p 2) into terms that add up to it', async () => {
    const t = await breakdown('narayanan21-39b');
    expect(termSum(t)).toBeCloseTo(t.stepMs, 6);
    expect(t.recomputeMs).toBeGreaterThan(0);
    expect(t.bubbleMs).toBeGreaterThan(0);
    expect(t.layersOnStage).toBe(24);
    // Full recompute re-runs each layer's forward once: about a third of forward + backward
    // (2 of the 6 GEMM FLOP units per weight), more where the forward's memory-bound share is larger.
    expect(t.recomputeMs / t.layersMs).toBeGreaterThan(0.25);
    expect(t.recomputeMs / t.layersMs).toBeLessThan(0.45);
    // The layer's terms account for its scheduled time: what is left (otherMs) is under 1% of it.
    const l = t.layer;
    expect(Math.abs(l.otherMs)).toBeLessThan(0.01 * l.totalMs);
    expect(l.linearGemmEfficiency).toBeGreaterThan(0);
    expect(l.linearGemmEfficiency).toBeLessThan(1);
  });

  it('has no recompute and no bubble without them (H100 1.7B, t 1 × p 1), and its terms still add up', async () => {
    const t = await breakdown('megatron-h100-1.7b');
    expect(termSum(t)).toBeCloseTo(t.stepMs, 6);
    expect(Math.abs(t.recomputeMs)).toBeLessThan(1e-6 * t.stepMs);
    expect(Math.abs(t.bubbleMs)).toBeLessThan(1e-6 * t.stepMs);
    expect(t.layer.tpExposedMs).toBe(0);
  });
});
