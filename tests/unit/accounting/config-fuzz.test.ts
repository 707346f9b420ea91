import { describe, expect, test } from 'vitest';
import { accountPlan } from '../../../src/accounting/accounting.ts';
import { budgetRun, memoryBudget } from '../../../src/accounting/budget.ts';
import { configFromPreset, presetNames, type LayerConfig } from '../../../src/parallel/config.ts';
import { makePlan } from '../../../src/parallel/plan.ts';
import { legalTpDegrees, maxHeads, maxSize, maxTp, validateConfig } from '../../../src/parallel/validate.ts';
import { rng } from '../../../src/reference/random.ts';
import { dpCap, gpusCap, hashKeys, hasControl, mCap, ppCap, settingsFromHash } from '../../../src/ui/settings/state.ts';
import { clusterModelChoices } from '../../../src/ui/settings/cluster-model-choice.ts';
import { clusterModelIssues, clusterModelOf, hfCaps } from '../../../src/ui/settings/cluster-model.ts';
import { meshIssues } from '../../../src/ui/settings/mesh-settings.ts';
import { pipelineScheduleNames } from '../../../src/mesh/pipeline-schedules.ts';

/**
 * Seeded property test over the configuration space: every case is either valid with a plan
 * inside the budget, or refused with a named rule and a message. Sizes mix small legal-looking
 * values, log-uniform values across the caps (up to 2^40), and hostile ones (0, negatives,
 * fractions, NaN, ±∞, 10^12 + 1, MAX_SAFE_INTEGER). The budget is 256 MiB (a device reporting
 * 1 GiB) so the plans built for valid cases stay small; the same code runs with the page's budget.
 */
const cases = 3000;
const budget = memoryBudget(1);
const next = rng(20261201);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)];
const hostile = [0, -1, 0.5, NaN, Infinity, -Infinity, 1e12 + 1, Number.MAX_SAFE_INTEGER, maxSize, maxSize + 1];

function size(small: readonly number[]): number {
  const u = next();
  if (u < 0.55) return pick(small);
  if (u < 0.9) return Math.floor(2 ** (next() * 40));
  return pick(hostile);
}

/** A preset at a legal degree with its sequence, batch and vocabulary scaled (valid, maybe over budget). */
function scaledPreset(): LayerConfig {
  const base = configFromPreset(pick(presetNames), { sp: next() < 0.5 });
  const tp = pick(legalTpDegrees(base, base.sp));
  const s = base.sp ? tp * Math.ceil(2 ** (next() * 14) / tp) : Math.ceil(2 ** (next() * 14));
  const vocab = next() < 0.5 ? base.vocab : Math.floor(2 ** (next() * 24));
  return { ...base, tp, s, b: Math.ceil(2 ** (next() * 8)), vocab };
}

function randomConfig(): LayerConfig {
  if (next() < 0.5) return scaledPreset();
  const base = configFromPreset(pick(presetNames));
  const heads = size([1, 2, 3, 4, 6, 8, 12, 16, 32]);
  return {
    ...base,
    s: next() < 0.3 ? base.s : size([1, 2, 7, 8, 16, 64, 128, 1000]),
    b: next() < 0.5 ? base.b : size([1, 2, 3, 4]),
    h: next() < 0.3 ? base.h : size([8, 16, 24, 64, 96, 256, 768, 1024]),
    heads: next() < 0.3 ? base.heads : heads,
    groups: next() < 0.3 ? base.groups : size([1, 2, 4, 8, heads]),
    ffn: next() < 0.3 ? base.ffn : size([16, 32, 64, 100, 704, 3072]),
    vocab: next() < 0.3 ? base.vocab : next() < 0.2 ? 0 : size([1, 31, 32, 512, 50257]),
    tp: next() < 0.9 ? 1 + Math.floor(next() * maxTp) : pick([0, 17, 32, 2.5, NaN, -4]),
    sp: next() < 0.5,
  };
}

/** The q-quantile of xs (0 ≤ q ≤ 1). */
const quantile = (xs: readonly number[], q: number): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};

describe('configuration fuzz', () => {
  test(`${cases} seeded configurations: each valid with a plan within budget, or a named error`, async () => {
    const outcome = { invalid: 0, overBudget: 0, planned: 0 };
    const caps = new Set(['s', 'b', 'h', 'ffn', 'vocab'] as const);
    const times: number[] = [];
    for (let i = 0; i < cases; i++) {
      const c = randomConfig();
      const label = JSON.stringify(c);
      const t0 = performance.now();
      const v = validateConfig(c);
      if (!v.ok) {
        outcome.invalid++;
        for (const e of v.errors) {
          expect(e.rule, label).toBeTruthy();
          expect(e.message.length, label).toBeGreaterThan(20);
          expect(e.message.length, `${label}: ${e.message}`).toBeLessThan(600);
        }
        // The caps that bound every rule's work: a size above its maximum is always refused (size-max,
        // or integer for ±∞), so no rule ever looks at divisors of more than 2^24.
        for (const f of caps)
          if (c[f] > maxSize)
            expect(
              v.errors.some((e) => e.field === f),
              label,
            ).toBe(true);
        if (c.heads > maxHeads)
          expect(
            v.errors.some((e) => e.field === 'heads'),
            label,
          ).toBe(true);
        times.push(performance.now() - t0);
        continue;
      }
      const b = budgetRun(c, budget);
      times.push(performance.now() - t0);
      if (!b.ok) {
        outcome.overBudget++;
        for (const e of b.errors) expect(e.message, label).toMatch(/needs .* more than .*; lower \w+/);
        continue;
      }
      outcome.planned++;
      const acc = accountPlan((await makePlan(c)).plan);
      // The plan's own accounting agrees with the budget, rank by rank, and fits the page.
      acc.memory.forEach((m, r) => {
        expect(b.ranks[r].gradients, label).toBe(m.parameterBytes);
        expect(b.ranks[r].activations, label).toBe(m.activationBytes);
      });
      expect(b.totalBytes, label).toBeLessThanOrEqual(budget.pageBytes);
      expect(b.largestBuffer.bytes, label).toBeLessThanOrEqual(budget.limits.maxStorageBufferBindingSize);
    }
    // Every outcome occurs, so no branch is silently never taken.
    expect(outcome.invalid).toBeGreaterThan(300);
    expect(outcome.overBudget).toBeGreaterThan(100);
    expect(outcome.planned).toBeGreaterThan(300);
    console.info(
      `config fuzz: ${cases} cases, ${outcome.invalid} invalid, ${outcome.overBudget} over budget, ${outcome.planned} planned; ` +
        `validation + budget per case: median ${quantile(times, 0.5).toFixed(3)} ms, p99 ${quantile(times, 0.99).toFixed(2)} ms, worst ${quantile(times, 1).toFixed(1)} ms (shared machine with GC pauses from the plans; not asserted)`,
    );
  }, 120_000);
});

describe('URL hash fuzz', () => {
  const chars = 'abcdefghijklmnopqrstuvwxyz0123456789=&%#:;,.-_+ /\\"<>\'`{}[]()é😀\u0000';
  const text = (n: number): string => Array.from({ length: n }, () => pick([...chars])).join('');
  const part = (): string => {
    const u = next();
    const key =
      u < 0.6
        ? pick(hashKeys)
        : u < 0.8
          ? pick(['constructor', '__proto__', 'toString', ''])
          : text((1 + next() * 12) | 0);
    const value = next() < 0.1 ? 'x'.repeat(10_000) : next() < 0.5 ? String(pick(hostile)) : text((next() * 20) | 0);
    return `${key}=${value}`;
  };

  test('1000 seeded hostile hashes parse without throwing into settings of the right types, with short messages', () => {
    for (let i = 0; i < 1000; i++) {
      const hash = '#' + Array.from({ length: 1 + ((next() * 12) | 0) }, part).join('&');
      const { settings, messages } = settingsFromHash(hash);
      for (const k of ['s', 'b', 'h', 'heads', 'groups', 'ffn', 'vocab', 'tp'] as const)
        expect(Number.isSafeInteger(settings[k]), `${hash.slice(0, 200)}: ${k}`).toBe(true);
      expect(typeof settings.sp).toBe('boolean');
      // What the cluster panel sizes by the GPU count or the stages stays within the page's caps.
      expect(settings.gpus, hash.slice(0, 200)).toBeLessThanOrEqual(gpusCap.max);
      expect(settings.pp, hash.slice(0, 200)).toBeLessThanOrEqual(ppCap.max);
      // The mesh: d and m within their caps, a schedule by name, and its rules answer (issues with messages, or none).
      expect(settings.dp).toBeLessThanOrEqual(dpCap.max);
      expect(settings.m).toBeLessThanOrEqual(mCap.max);
      expect(pipelineScheduleNames).toContain(settings.schedule);
      for (const i of meshIssues(settings)) expect(i.message.length, i.message.slice(0, 200)).toBeLessThan(700);
      expect(messages.filter((m) => /^(unknown key |\d+ unknown keys )/.test(m.message)).length).toBeLessThanOrEqual(1);
      for (const m of messages) expect(m.message.length, m.message.slice(0, 200)).toBeLessThan(700);
      // A hash's settings always validate to an answer (valid, or errors with messages).
      const v = validateConfig({ ...configFromPreset(settings.preset), ...settings, seed: 1234 });
      expect(v.ok || v.errors.length > 0).toBe(true);
    }
  }, 60_000);

  test('300 seeded hashes of the cluster model, EP, ETP, N and p: the model and its rules answer with short messages, within the caps', () => {
    const own = rng(20261207);
    const one = <T>(xs: readonly T[]): T => xs[Math.floor(own() * xs.length)];
    const values = {
      cmodel: [...clusterModelChoices, 'hf:', 'hf:x', `hf:${'x'.repeat(10_000)}`, 'hf:__proto__', 'HF:deepseek-v3'],
      ep: ['1', '2', '3', '8', '64', '65', '0', '-1', '2.5', 'x'.repeat(10_000)],
      etp: ['1', '2', '4', '7', '64', '1e9'],
      gpus: ['8', '16', '24', '256', '8192', '8193'],
      pp: ['1', '2', '3', '8'],
      vpp: ['1', '2'],
      // The cluster's MoE flags (cluster-model.ts clusterMoeFlags): legal values, Megatron's refusals, hostile text.
      dispatcher: ['alltoall', 'allgather', 'flex', 'deepep'],
      capacity: ['off', '1', '1.25', '0', 'x'],
      gg: ['0', '1', 'maybe'],
      epov: ['0', '1'],
      seov: ['0', '1'],
      pad: ['0', '1'],
      imb: ['1', '1.5', '64', '0.5', '65', 'NaN'],
      recompute: ['none', 'full'],
    } as const;
    for (let i = 0; i < 300; i++) {
      const hash =
        '#' +
        Object.entries(values)
          .filter(() => own() < 0.8)
          .map(([k, vs]) => `${k}=${one(vs)}`)
          .join('&');
      const { settings, messages } = settingsFromHash(hash);
      for (const m of messages) expect(m.message.length, m.message.slice(0, 200)).toBeLessThan(700);
      expect(clusterModelChoices).toContain(settings.cmodel);
      const issues = clusterModelIssues(settings);
      for (const x of issues) {
        expect(hasControl(x.field), hash.slice(0, 200)).toBe(true);
        expect(x.message.length, x.message.slice(0, 200)).toBeLessThan(700);
      }
      let model: ReturnType<typeof clusterModelOf> | undefined;
      try {
        model = clusterModelOf(settings);
      } catch (e) {
        // hf:pasted with nothing kept, Qwen3-30B-A3B: said at cmodel.
        expect(issues.some((x) => x.field === 'cmodel' && x.message === (e as Error).message)).toBe(true);
      }
      if (model?.moe) {
        expect([model.moe.ep, model.moe.etp]).toEqual([settings.ep, settings.etp]);
        expect([model.moe.overlapEpComm, model.moe.sharedExpertOverlap, model.moe.imbalance]).toEqual([
          settings.epov,
          settings.seov,
          settings.imb,
        ]);
        expect(model.moe.imbalance).toBeGreaterThanOrEqual(1);
        expect(model.moe.padToCapacity ?? false).toBe(settings.pad);
      }
      if (model) expect(model.layers).toBeLessThanOrEqual(hfCaps.layers);
    }
  });
});
