import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import { publishedRuns } from '../../../../src/megatron/published-runs.ts';
import { seedsV100 } from '../../../../src/megatron/scenarios.ts';
import { chunkTimes } from '../../../../src/projection/step/chunk-times.ts';
import { assembleStep } from '../../../../src/projection/step/cluster-projection.ts';
import { priceLayers } from '../../../../src/projection/step/layer-pricing.ts';
import { publishedSetup } from '../../../../src/projection/studies/published-comparison.ts';
import { stepBreakdown, type StepTerms } from '../../../../src/projection/studies/step-breakdown.ts';

/** The step's terms, which stepBreakdown says add up to the projected step. */
const termSum = (t: StepTerms): number =>
  t.layersMs +
  t.cpRingMs +
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

  it('checks every term on its own: t 2 SP × p 4, full recompute, tied embeddings (8×V100 PCIe)', async () => {
    const machine = { system: systems['v100-pcie-8'], dtype: 'fp16' as const };
    const setup = {
      ...seedsV100.setup,
      tp: 2,
      sp: true,
      layers: 8,
      pp: 4,
      recompute: true,
      tiedEmbeddings: true,
    };
    const t = await stepBreakdown(setup, machine);
    const pricing = await priceLayers(setup, machine);
    const step = assembleStep(setup, machine, pricing);
    const { layer, output } = pricing.pieces;
    const m = step.microBatches;
    expect(m).toBe(8);
    expect(step.split.layers).toEqual([[2], [2], [2], [2]]);
    // The busiest stage is the last: its output layer over V/2 rows outweighs the first's lookup.
    expect(output.forward.ms + output.backward.ms).toBeGreaterThan(
      pricing.pieces.embedding.forward.ms + pricing.pieces.embedding.backward.ms,
    );
    expect(t.layersOnStage).toBe(2);
    expect(t.layersMs).toBeCloseTo(m * 2 * (layer.forward.ms + layer.backward.ms), 9);
    // Full recompute re-runs each of the stage's 2 layers' forward once per micro-batch.
    expect(t.recomputeMs).toBeCloseTo(m * 2 * layer.forward.ms, 9);
    expect(t.embeddingOutputMs).toBeCloseTo(m * (output.forward.ms + output.backward.ms), 9);
    expect(t.bubbleMs).toBeCloseTo(step.pipeline.spanMs - step.pipeline.busyMs[3]!, 9);
    expect(t.bubbleMs).toBeGreaterThan(0);
    expect(t.dpGradMs).toBe(step.dpAllReduceMs + step.overlapCostMs.dp);
    expect(t.paramGatherMs).toBe(step.paramGatherMs);
    expect(t.optimizerMs).toBe(step.optimizerMs);
    // SP's norm gradients and the tied embedding's pair {0, 6}, {1, 7} on one node's PCIe, both non-zero.
    expect(step.finalizeMs).toBeGreaterThan(0);
    const { intra } = machine.system;
    const { vocab, h } = setup.sizes;
    const pairMs =
      (machine.system.collectiveBaseUs + 2 * (intra.alphaUs + ((vocab / 2) * h * 2) / 2 / (intra.busGBps * 1e3))) / 1e3;
    expect(step.embeddingAllReduceMs).toBeCloseTo(pairMs, 12);
    expect(t.finalizeMs).toBeCloseTo(step.finalizeMs + pairMs, 12);
    expect(termSum(t)).toBeCloseTo(t.stepMs, 6);
    expect(t.stepMs).toBe(step.stepMs);
  });

  it('labels context parallelism’s ring as its own term, not recompute (cp 2, no recompute)', async () => {
    const machine = { system: systems['dgx-h100'], dtype: 'bf16' as const };
    const setup = { ...seedsV100.setup, tp: 2, cp: 2, gpus: 8 };
    const t = await stepBreakdown(setup, machine);
    const pricing = await priceLayers(setup, machine);
    const ring = chunkTimes(setup, machine, pricing).ring;
    expect(ring.forwardMs).toBeGreaterThan(0);
    expect(t.cpRingMs).toBeCloseTo(t.microBatches * t.layersOnStage * (ring.forwardMs + ring.backwardMs), 9);
    expect(Math.abs(t.recomputeMs)).toBeLessThan(1e-6 * t.stepMs);
    expect(termSum(t)).toBeCloseTo(t.stepMs, 6);
  });
});
