import { describe, expect, test } from 'vitest';
import { accountPlan } from '../../../src/accounting/accounting.ts';
import {
  budgetRun,
  cpuTwinMaxBytes,
  cpuTwinsSkipped,
  memoryBudget,
  stagingBound,
  webgpuDefaultLimits,
} from '../../../src/accounting/budget.ts';
import { activationTerms } from '../../../src/accounting/activations.ts';
import { parameterShards } from '../../../src/accounting/parameters.ts';
import { configFromPreset, presetNames, type LayerConfig } from '../../../src/parallel/config.ts';
import { makePlan } from '../../../src/parallel/plan.ts';
import { legalTpDegrees } from '../../../src/parallel/validate.ts';

const budget = memoryBudget(undefined);
const GiB = 2 ** 30;

describe('memoryBudget', () => {
  test('is a quarter of navigator.deviceMemory, or of 8 GiB when the browser does not say', () => {
    expect(memoryBudget(4).pageBytes).toBe(1 * GiB);
    expect(memoryBudget(4).pageSource).toBe("25% of this device's 4 GiB");
    expect(budget.pageBytes).toBe(2 * GiB);
    expect(budget.pageSource).toBe('25% of 8 GiB assumed (navigator.deviceMemory not reported)');
    expect(memoryBudget(0).pageBytes).toBe(2 * GiB);
    expect(budget.limits).toEqual(webgpuDefaultLimits);
  });
});

describe('budgetRun', () => {
  test.each(presetNames)('every legal degree ≤ 8 of preset %s fits the default budget', (p) => {
    for (const sp of [false, true])
      for (const tp of legalTpDegrees(configFromPreset(p), sp, 8)) {
        const r = budgetRun(configFromPreset(p, { tp, sp }), budget);
        expect(r.errors).toEqual([]);
        expect(r.totalBytes).toBeLessThan(budget.pageBytes);
      }
  });

  test.each([
    ['gpt2-layer', 4, false],
    ['llama-gqa', 8, true],
    ['classroom', 2, true],
  ] as const)(
    'counts %s at t = %i (SP %s) from the plan accounting: weights twice, gradients once, activations, with groups < t the gathered QKV [s, b, W] as scratch, and the staged GEMM textures',
    async (p, tp, sp) => {
      const c = configFromPreset(p, { tp, sp });
      const { plan } = await makePlan(c);
      const memory = accountPlan(plan).memory;
      const r = budgetRun(c, budget);
      r.ranks.forEach((rb, i) => {
        expect(rb.weights).toBe(2 * memory[i].parameterBytes);
        expect(rb.gradients).toBe(memory[i].gradientBytes);
        expect(rb.activations).toBe(memory[i].activationBytes);
        // llama-gqa at t = 8 has 2 KV groups < t: the gathered QKV [s, b, (8 + 2·2)·32] is held in forward and its gradient in backward.
        const gathered = c.groups < tp ? c.s * c.b * (c.heads + 2 * c.groups) * (c.h / c.heads) * 4 : 0;
        expect(rb.scratch).toBe(memory[i].activationBytes + 2 * c.s * c.b * c.h * 4 + gathered);
        // Staging: bounded by the largest tensor the rank holds (every GEMM operand is a view of one).
        const largest = Math.max(
          ...parameterShards(plan, i).map((x) => x.bytes),
          ...activationTerms(plan, i).map((x) => x.bytes),
          c.s * c.b * c.h * 4,
          gathered,
        );
        expect(rb.staging).toBe(stagingBound(largest));
        expect(rb.staging).toBe(2 * (2 * largest + 16 * 2048));
        expect(rb.total).toBe(rb.weights + rb.gradients + rb.activations + rb.scratch + rb.staging);
      });
      const ref = accountPlan((await makePlan({ ...c, tp: 1, sp: false })).plan).memory[0];
      expect(r.reference.gradients).toBe(ref.parameterBytes);
      const ranks = r.ranks.reduce((a, x) => a + x.total, 0);
      expect(r.totalBytes).toBe(ranks + r.reference.total + r.cpuTwins);
      // The twins copy the step's tensors in float64, not the GPU's staged GEMM textures.
      const twinBytes = r.reference.total - r.reference.staging;
      expect(r.cpuTwins).toBe(twinBytes <= cpuTwinMaxBytes ? 2 * twinBytes : 0);
    },
  );

  test('#b=100000 on the classroom preset is refused naming the size, the budget and what to lower', () => {
    const r = budgetRun(configFromPreset('classroom', { tp: 2, b: 100_000 }), budget);
    expect(r.ok).toBe(false);
    expect(r.errors.map((e) => e.rule)).toEqual(['page-budget']);
    const e = r.errors[0];
    expect(e.message).toMatch(
      /^this run needs 5\.07 GiB: 2 ranks × 1\.42 GiB \(weights .*, activations kept for backward .*, scratch .*, staged GEMM textures .*\) \+ the TP=1 reference 2\.23 GiB — more than the page budget of 2 GiB \(25% of 8 GiB assumed/,
    );
    expect(e.message).toMatch(/lower s \(halving it saves [\d.]+ GiB\)\.$/);
    expect(e.fields).toEqual(expect.arrayContaining(['s', 'b']));
  });

  test('a vocabulary whose embedding exceeds the buffer limit is refused naming the tensor and the limit', () => {
    const c: LayerConfig = configFromPreset('classroom', { tp: 2, vocab: 4_000_000, h: 16 });
    const r = budgetRun(c, { ...budget, pageBytes: 1e15 });
    expect(r.errors.map((e) => e.rule)).toEqual(['buffer-limit']);
    expect(r.errors[0].message).toBe(
      "the TP=1 reference's tensor weight embedding [4000000, 16] needs 244 MiB in one buffer, more than WebGPU's guaranteed maxStorageBufferBindingSize of 128 MiB; lower h or vocab (halving either saves 122 MiB).",
    );
    expect(r.largestBuffer).toEqual({ name: 'weight embedding', shape: [4_000_000, 16], bytes: 256_000_000 });
  });

  test('the adapter limits passed in are the ones checked', () => {
    const c = configFromPreset('classroom', { tp: 2, vocab: 4_000_000 });
    const big = { ...webgpuDefaultLimits, maxStorageBufferBindingSize: 2 ** 31, maxBufferSize: 2 ** 31 };
    expect(budgetRun(c, memoryBudget(64, big, "this adapter's")).errors).toEqual([]);
    expect(budgetRun(c, memoryBudget(64)).errors.map((e) => e.rule)).toEqual(['buffer-limit']);
  });
});

describe('cpuTwinsSkipped', () => {
  test('the twins run on the classroom preset and are skipped, with the reason, above their limits', () => {
    expect(cpuTwinsSkipped(configFromPreset('classroom', { tp: 2 }), 1e5)).toBeUndefined();
    expect(cpuTwinsSkipped(configFromPreset('gpt2-layer', { tp: 2 }), 1e5)).toMatch(
      /^CPU twins skipped: the TP=1 step needs 112 MiB, more than their 32 MiB limit/,
    );
    expect(cpuTwinsSkipped(configFromPreset('classroom', { tp: 2 }), 6e7)).toMatch(
      /^CPU twins skipped: the step is 60 MFLOP per rank, more than their 50 MFLOP limit/,
    );
  });
});
