// What-if from a trace, on a job whose truth is known: traces written from the projection on a
// "truth" system (what-if-traces.ts), re-projected to other layouts, compared with the truth's
// projection of those layouts.
import { describe, expect, test } from 'vitest';
import { classSumRefusal, modelClassMs, whatIfFromTrace, type Layout } from '../../../src/calibrate/trace-what-if.ts';
import type { KernelScale } from '../../../src/hardware/calibrated-rates.ts';
import { systems, type SystemSpec } from '../../../src/hardware/systems.ts';
import type { TrainingSetup } from '../../../src/megatron/training-setup.ts';
import { presets } from '../../../src/parallel/config.ts';
import { defaultKernelOptions } from '../../../src/projection/layer/kernel-options.ts';
import { projectStep } from '../../../src/projection/step/cluster-projection.ts';
import { truthTrace, waits } from './what-if-traces.ts';

const base = systems['dgx-h100'];
/** Llama-style, GQA, 8 layers on one 8-GPU node; the job ran t = 4 with SP, DP 2, distributed optimizer. */
const setup: TrainingSetup = {
  sizes: { ...presets['llama-gqa'], s: 2048, b: 1, h: 2048, heads: 16, groups: 8, ffn: 5632, vocab: 32000 },
  tp: 4,
  sp: true,
  layers: 8,
  gpus: 8,
  globalBatch: 16,
  overlap: true,
  distributedOptimizer: true,
  flashAttention: true,
};
const layout = (label: string, over: Partial<TrainingSetup>): Layout => ({
  label,
  setup: { ...setup, ...over },
  dtype: 'bf16',
});
const job = layout('t4 d2 (the job)', {});
const others = [
  layout('t2 d4', { tp: 2 }),
  layout('t8 d1', { tp: 8 }),
  layout('t1 d8', { tp: 1, sp: false }),
  layout('t2 p2 d2', { tp: 2, pp: 2 }),
  layout('t2 p2 v2 d2', { tp: 2, pp: 2, vpp: 2 }),
  layout('t4 cp2 d1', { cp: 2 }),
  layout('micro-batch 2', { sizes: { ...setup.sizes, b: 2 } }),
  layout('full recompute', { recompute: true }),
  layout('no overlap', { overlap: false }),
];

/**
 * The truth: kernels slower than the model by class (GEMMs 1.3×, FlashAttention 1.5×,
 * memory-bound 1.2×), and — what the what-if does not model — GEMMs losing `drift` more per
 * halving of their local width (t doubling): 1.3·(1 + drift·log₂ t). The node's link at α = 2 µs
 * (the catalog's 1) and 0.7× the catalog's bandwidth.
 */
function truthOn(t: number, drift: number): SystemSpec {
  const kernelScale: KernelScale = { gemm: 1.3 * (1 + drift * Math.log2(t)), attention: 1.5, memory: 1.2 };
  return { ...base, kernelScale, intra: { ...base.intra, alphaUs: 2, busGBps: base.intra.busGBps * 0.7 } };
}

describe('what-if from a trace (synthetic job of known truth)', () => {
  test('the class sums the model gives are what the scaled kernels add up to', async () => {
    const on1 = await modelClassMs(job, base);
    const scaled = await modelClassMs(job, { ...base, kernelScale: { gemm: 3, attention: 3, memory: 3 } });
    // modelClassMs prices at its own scales (1 and 2), whatever the system carries.
    expect(scaled).toEqual(on1);
    expect(on1.gemm).toBeGreaterThan(on1.memory);
    expect(on1.attention).toBeGreaterThan(0);
  });

  test('a GPT layer with selective core_attn recompute is refused with the reason; without recompute it is priced', async () => {
    const gpt = (over: Partial<TrainingSetup>): Layout => ({
      ...layout('gpt', over),
      kernels: { ...defaultKernelOptions, layerArch: 'gpt' },
    });
    const refused = gpt({ recomputation: { granularity: 'selective', modules: ['core_attn'] } });
    await expect(modelClassMs(refused, base)).rejects.toThrow(
      /kernel classes inside a whole-layer CUDA graph.*transformer_config\.py:2545-2552.*Rate a trace of a job without that recompute/,
    );
    expect(classSumRefusal(job)).toBeUndefined();
    expect(classSumRefusal(gpt({}))).toBeUndefined();
    expect((await modelClassMs(gpt({}), base)).gemm).toBeGreaterThan(0);
  });

  test('rates recovered from the trace: each class scale, and α and B of the node link', async () => {
    const truth = truthOn(job.setup.tp, 0);
    const w = await whatIfFromTrace(await truthTrace(job, truth), job, base, []);
    for (const c of w.rates.classes) expect(c.scale).toBeCloseTo(truth.kernelScale![c.cls], 9);
    const link = w.rates.links.find((l) => l.scope === 'intra')!;
    expect(link.how).toBe('α and B');
    // The median call took waits[1] longer than the truth's, its fixed NCCL base latency too;
    // the fit keeps the base at the catalog's, so α and B carry the stretch of all three: B is
    // below the truth's by the stretch and at most as much again from the base's share.
    expect(link.busGBps / truth.intra.busGBps).toBeLessThan(1);
    expect(link.busGBps / truth.intra.busGBps).toBeGreaterThan(1 / (1 + 2 * waits[1]));
    expect(link.alphaUs).toBeGreaterThan(truth.intra.alphaUs);
    expect(link.alphaUs).toBeLessThan(truth.intra.alphaUs * (1 + 2 * waits[1]) + base.collectiveBaseUs * waits[1]);
  });

  test('A → B within the unmodelled GEMM drift plus the median wait; closer than the catalog alone', async () => {
    const drift = 0.02;
    const truthA = truthOn(job.setup.tp, drift);
    const w = await whatIfFromTrace(await truthTrace(job, truthA), job, base, others);
    for (const r of [w.job, ...w.rows]) {
      expect(r.ok, r.ok ? '' : r.reason).toBe(true);
      if (!r.ok) continue;
      const t = r.layout.setup.tp;
      const truth = await projectStep(r.layout.setup, { system: truthOn(t, drift), dtype: 'bf16' });
      const error = r.reprojected.stepMs / truth.stepMs - 1;
      // Bound: GEMMs are ≤ all of the step, so the drift between A's t and B's t bounds their part;
      // collectives are priced from the median call, waits[1] above the truth's transfer.
      const gemmDrift = Math.abs((1 + drift * Math.log2(t)) / (1 + drift * Math.log2(job.setup.tp)) - 1);
      expect(Math.abs(error), r.layout.label).toBeLessThanOrEqual(gemmDrift + waits[1]);
      const nominal = r.nominal.stepMs / truth.stepMs - 1;
      expect(Math.abs(error), r.layout.label).toBeLessThan(Math.abs(nominal));
      // The job itself: the catalog is 25% fast (kernels 1.2–1.5× slower, the link 0.7×).
      if (r === w.job) expect(nominal).toBeLessThan(-0.2);
    }
  });
});
