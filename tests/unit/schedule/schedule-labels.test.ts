import { describe, expect, test } from 'vitest';
import { configFromPreset, type LayerConfig } from '../../../src/parallel/config.ts';
import { makePlan } from '../../../src/parallel/plan.ts';
import type { LayerPlan } from '../../../src/parallel/plan-types.ts';
import { scheduleStep, type ScheduledEvent, type StepDurations } from '../../../src/schedule/schedule.ts';

// Meaning lives in the plan's typed fields, not in op labels: renaming every op gives the same schedule.

/** Distinct durations per (rank, op) so that any change in order or overlap moves some event. */
function durations(plan: LayerPlan): StepDurations {
  const row = (r: number, scale: number) => plan.ops.map((op) => scale * (1 + ((op.index * 7 + r * 3) % 11)));
  return {
    computeMs: plan.ranks.map((_, r) => row(r, 0.1)),
    commMs: plan.ranks.map((_, r) => row(r, 0.25)),
  };
}

/** Every label replaced; the adversarial ones swap the suffixes the scheduler once read ('.wgrad', '.dgrad.reduce'). */
const renamings: [string, (name: string, i: number) => string][] = [
  ['numbered', (_, i) => `op${i}`],
  ['suffixes swapped', (name) => (name.endsWith('.wgrad') ? `${name}.dgrad.reduce` : `${name}.wgrad`)],
];

const withoutLabel = (e: ScheduledEvent): Omit<ScheduledEvent, 'op'> => {
  const { op: _op, ...rest } = e;
  return rest;
};

const configs: [string, LayerConfig][] = [
  ['gpt2-layer t = 4', configFromPreset('gpt2-layer', { tp: 4 })],
  ['gpt2-layer t = 4 with SP', configFromPreset('gpt2-layer', { tp: 4, sp: true })],
  ['llama-gqa t = 8 (QKV all-gathered, groups < t)', configFromPreset('llama-gqa', { tp: 8 })],
  ['classroom t = 2 with a vocabulary', configFromPreset('classroom', { tp: 2, vocab: 64 })],
];

describe('the schedule reads what an op is, never its label', () => {
  for (const [what, c] of configs)
    for (const [how, rename] of renamings)
      test(`${what}: every op relabelled (${how}) gives the identical schedule, with and without overlap`, async () => {
        const { plan } = await makePlan(c);
        const renamed: LayerPlan = { ...plan, ops: plan.ops.map((op, i) => ({ ...op, name: rename(op.name, i) })) };
        expect(renamed.ops.some((op, i) => op.name !== plan.ops[i]!.name)).toBe(true);
        const d = durations(plan);
        for (const overlap of [false, true]) {
          const a = scheduleStep(plan, d, { overlap });
          const b = scheduleStep(renamed, d, { overlap });
          expect(b.events.map(withoutLabel)).toEqual(a.events.map(withoutLabel));
          expect(b.totals).toEqual(a.totals);
          expect(b.stepMs).toBe(a.stepMs);
        }
        // The overlap option must matter here, or the comparison above proves little.
        expect(scheduleStep(plan, d, { overlap: true }).events.some((e) => e.overlapped)).toBe(true);
      });
});

describe('the plan says what each op is', () => {
  test('the async collectives are the dgrad reductions and the SP re-gathers; what runs under them are the weight gradients and, after a re-gather, the dgrad GEMMs', async () => {
    const { plan } = await makePlan(configFromPreset('classroom', { tp: 2, vocab: 64, sp: true }));
    const asyncOps = plan.ops.filter((o) => o.overlap.async);
    const reductions = asyncOps.filter((o) => o.role === 'dgrad');
    expect(reductions.map((o) => [o.kind, o.phase, o.split])).toEqual(
      reductions.map(() => ['collective', 'backward', 'column']),
    );
    expect(reductions).toHaveLength(3); // output layer, MLP, attention
    const regathers = asyncOps.filter((o) => o.role !== 'dgrad');
    expect(
      regathers.map((o) => [o.kind, o.phase, o.role, o.split, o.kind === 'collective' && o.collective.op]),
    ).toEqual(regathers.map(() => ['collective', 'backward', 'forward', 'sequence', 'allGather']));
    expect(regathers.length).toBeGreaterThanOrEqual(2); // the MLP and attention inputs
    const under = plan.ops.filter((o) => o.overlap.underAsync);
    expect(under.length).toBeGreaterThan(0);
    for (const o of under) {
      expect(o.kind).not.toBe('collective');
      if (o.role === 'dgrad') expect(o.kind).toBe('gemm');
      else expect(o.role).toBe('wgrad');
    }
  });

  test('every GEMM of a linear names its weight and split; the attention core is split by heads and has none', async () => {
    const { plan } = await makePlan(configFromPreset('llama-gqa', { tp: 2 }));
    const gemms = plan.ops.filter((o) => o.kind === 'gemm');
    for (const o of gemms) {
      if (o.split === 'heads') expect(o.weight).toBeUndefined();
      else {
        expect(['column', 'row']).toContain(o.split);
        expect(o.weight).toBeDefined();
        expect(o.megatron).toMatch(o.split === 'column' ? /^ColumnParallelLinear/ : /^RowParallelLinear/);
      }
    }
    expect(new Set(gemms.map((o) => o.weight))).toEqual(new Set([undefined, 'wqkv', 'wo', 'wfc1', 'wdown', 'wout']));
  });

  test("the replicated norm-gradient all-reduce under SP is finalize_model_grads' (phase finalize): flatten, one all-reduce, unflatten", async () => {
    const { plan } = await makePlan(configFromPreset('gpt2-layer', { tp: 2, sp: true }));
    const fin = plan.ops.filter((o) => o.phase === 'finalize');
    expect(fin.map((o) => [o.kind, o.role, o.weight])).toEqual([
      ['kernel', 'wgrad', 'g1'],
      ['kernel', 'wgrad', 'g2'],
      ['collective', 'wgrad', undefined],
      ['kernel', 'wgrad', 'g1'],
      ['kernel', 'wgrad', 'g2'],
    ]);
    expect(fin.every((o) => !o.overlap.async && !o.overlap.underAsync)).toBe(true);
  });
});
