import { describe, expect, test } from 'vitest';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { makePlan } from '../../../src/parallel/plan.ts';
import { collectiveOf, type LayerPlan } from '../../../src/parallel/plan-types.ts';
import { scheduleStep } from '../../../src/schedule/schedule.ts';

/*
 * Megatron's ColumnParallelLinear backward under SP (LinearWithGradAccumulationAndAsyncCommunication
 * .backward, megatron/core/tensor_parallel/layers.py): the all-gather of the saved [s/t, b, h]
 * input is issued before the dgrad GEMM and waited after it; then the reduce-scatter of dX runs
 * under the wgrad GEMMs. Hand-computed case: every op takes 0 ms except the MLP's gate and up
 * dgrad GEMMs (1 ms each, so dgrad = 2 ms) and the re-gather ln2.regather (AG ms): the re-gather
 * is exposed for max(0, AG − dgrad).
 */

const index = (plan: LayerPlan, name: string): number => plan.ops.findIndex((o) => o.name === name);

function timeline(plan: LayerPlan, agMs: number, overlap: boolean) {
  const t = plan.ranks.length;
  const ms = plan.ops.map((o) => (o.name === 'mlp.gate.dgrad' || o.name === 'mlp.up.dgrad' ? 1 : 0));
  const comm = plan.ops.map((o) => (o.name === 'ln2.regather' ? agMs : 0));
  return scheduleStep(
    plan,
    { computeMs: Array.from({ length: t }, () => ms), commMs: Array.from({ length: t }, () => comm) },
    { overlap },
  );
}

describe('the SP re-gather in backward, in Megatron’s order', () => {
  test('is issued before the dgrad GEMMs, which run under it; the dX reduce-scatter comes after them and the wgrads run under it', async () => {
    const { plan } = await makePlan(configFromPreset('gpt2-layer', { tp: 2, sp: true }));
    for (const block of [
      ['ln2.regather', 'mlp.gate.dgrad', 'mlp.up.dgrad', 'mlp.dgrad.reduce', 'mlp.gate.wgrad', 'mlp.up.wgrad'],
      ['ln1.regather', 'qkv.q.dgrad', 'qkv.k.dgrad', 'qkv.v.dgrad', 'attn.dgrad.reduce', 'qkv.q.wgrad'],
    ]) {
      const at = block.map((n) => index(plan, n));
      expect(at.every((i) => i >= 0)).toBe(true);
      expect(at, block.join(' < ')).toEqual([...at].sort((a, b) => a - b));
      expect(at[1]).toBe(at[0] + 1); // nothing between the issue and the first dgrad GEMM
      const [regather, ...rest] = at.map((i) => plan.ops[i]);
      expect(regather.overlap).toEqual({ async: true, underAsync: false });
      expect(rest.filter((o) => o.role === 'dgrad' && o.kind === 'gemm').every((o) => o.overlap.underAsync)).toBe(true);
    }
  });

  test('the output layer under SP keeps its input shard and re-gathers it the same way: before logits.dgrad, waited before the dY reduce-scatter that runs under logits.wgrad', async () => {
    const { plan } = await makePlan(configFromPreset('llama-gqa', { tp: 4, sp: true }));
    const names = ['logits.regather', 'logits.dgrad', 'logits.dgrad.reduce', 'logits.wgrad'];
    const at = names.map((n) => index(plan, n));
    expect(at).toEqual([...at].sort((a, b) => a - b));
    expect(at[1]).toBe(at[0] + 1);
    const [regather, dgrad, reduce] = at.map((i) => plan.ops[i]);
    expect([collectiveOf(regather).op, regather.overlap.async, dgrad.overlap.underAsync]).toEqual([
      'allGather',
      true,
      true,
    ]);
    expect([collectiveOf(reduce).op, reduce.overlap.async]).toEqual(['reduceScatter', true]);
    expect(collectiveOf(regather).payloadBytes).toBe(64 * 1 * 256 * 4);
  });

  test.each([
    [1, 0], // AG 1 ms under 2 ms of dgrad: hidden
    [2, 0],
    [3, 1], // AG 3 ms: 1 ms sticks out past the dgrad GEMMs
    [5.5, 3.5],
  ])(
    'with overlap, a re-gather of %f ms over 2 ms of dgrad is exposed for %f ms on every rank',
    async (ag, exposed) => {
      const { plan } = await makePlan(configFromPreset('gpt2-layer', { tp: 2, sp: true }));
      const tl = timeline(plan, ag, true);
      const events = tl.events.filter((e) => e.op === 'ln2.regather');
      expect(events).toHaveLength(2);
      for (const e of events) {
        expect(e.exposedMs).toBeCloseTo(Math.max(0, ag - 2), 12);
        expect(e.exposedMs).toBeCloseTo(exposed, 12);
      }
      // The dgrad GEMMs start when the re-gather is issued; the reduce-scatter waits for both.
      const at = (op: string) => tl.events.find((e) => e.rank === 0 && e.op === op)!;
      expect(at('mlp.gate.dgrad').t0).toBe(at('ln2.regather').t0);
      expect(at('mlp.dgrad.reduce').t0).toBeCloseTo(at('ln2.regather').t0 + Math.max(ag, 2), 12);
    },
  );

  test('without overlap the re-gather blocks: exposed whole, the dgrad GEMMs after it', async () => {
    const { plan } = await makePlan(configFromPreset('gpt2-layer', { tp: 2, sp: true }));
    const tl = timeline(plan, 3, false);
    const at = (op: string) => tl.events.find((e) => e.rank === 0 && e.op === op)!;
    expect(at('ln2.regather').exposedMs).toBe(3);
    expect(at('mlp.gate.dgrad').t0).toBe(at('ln2.regather').t1);
  });
});
