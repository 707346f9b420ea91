import { describe, expect, it } from 'vitest';
import {
  megatronMoeFlops,
  moePublishedRuns,
  moePublishedStepS,
  moeRunApproximations,
} from '../../../../src/megatron/moe-published-runs.ts';
import { moeRefusals } from '../../../../src/megatron/moe.ts';
import { compareMoePublished, moePublishedSetup } from '../../../../src/projection/studies/moe-published.ts';

const run = (id: string) => moePublishedRuns.find((r) => r.id === id)!;

describe('the published MoE runs', () => {
  it('each names its source by URL and passes Megatron’s MoE rules as the projection maps it', () => {
    expect(moePublishedRuns.length).toBeGreaterThanOrEqual(4);
    for (const r of moePublishedRuns) {
      expect(r.source.url).toMatch(/^https:\/\//);
      const { setup } = moePublishedSetup(r);
      const job = {
        tp: setup.tp,
        sp: setup.sp,
        pp: setup.pp ?? 1,
        vpp: setup.vpp ?? 1,
        gpus: setup.gpus,
        layers: setup.layers,
        fullRecompute: false,
        halfPrecision: true,
        biases: false,
      };
      expect(moeRefusals(r.moe, job)).toEqual([]);
    }
  });
  it('says the source’s recompute is left out from the typed modules, not from a string', () => {
    const recomputeLine = (id: string) => moeRunApproximations(run(id)).filter((a) => a.includes('recompute'));
    expect(run('qwen3-235b-a2a-pp32').recomputeModules).toEqual(['moe_act', 'layernorm']);
    expect(recomputeLine('qwen3-235b-a2a-pp32')).toEqual([
      '--recompute-modules moe_act layernorm (recomputed in backward): not applied to this comparison (priced on its own: docs/projection-memory-levers.md)',
    ]);
    // The DeepEP t 4 row has no recompute ("(no recompute)" in its source row).
    expect(run('qwen3-235b-deepep-tp4-ep8').recomputeModules).toEqual([]);
    expect(recomputeLine('qwen3-235b-deepep-tp4-ep8')).toEqual([]);
  });
  it('recovers the step from Megatron’s FLOP count (training.py, core_v0.19.0) and the per-GPU rate', () => {
    const r = run('mixtral-8x22b-forced');
    const { s, h, ffn, layers, vocab } = r.model;
    const q = h; // 48 heads of 128
    const kv = 8 * 128;
    const perToken = 6 * h * 3 * ffn * 2 * layers + 6 * (h * (q + 2 * kv) + q * h) * layers + 6 * h * vocab;
    const flops = 256 * s * perToken + 256 * s * s * 6 * q * layers;
    expect(megatronMoeFlops(r)).toBeCloseTo(flops, -6);
    expect(moePublishedStepS(r)).toBeCloseTo(flops / (128 * 465e12), 9);
    expect(moePublishedStepS(run('qwen3-235b-deepep-ep32'))).toBe(19.7);
  });
  it('projects a run with nothing fitted: the error is what comes out', async () => {
    const c = await compareMoePublished(run('mixtral-8x22b-forced'));
    expect(Number.isFinite(c.stepError)).toBe(true);
    expect(c.stepError).toBeCloseTo(c.projected.stepMs / 1e3 / c.publishedStepS - 1, 12);
  }, 30_000);
});
