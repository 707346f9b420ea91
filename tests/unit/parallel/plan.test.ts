import { describe, expect, test } from 'vitest';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { makePlan } from '../../../src/parallel/plan.ts';
import { collectiveOf, gemmOf, isCollectiveOp } from '../../../src/parallel/plan-types.ts';

const collectives = (ops: Awaited<ReturnType<typeof makePlan>>['plan']['ops'], phase: string) =>
  ops
    .filter(isCollectiveOp)
    .filter((o) => o.phase === phase)
    .map((o) => `${o.name}:${o.collective.op}`);

describe('the plan is the layer run on shapes', () => {
  test('without SP a layer does two all-reduces of s·b·h·4 bytes forward and two backward (no vocabulary)', async () => {
    const c = configFromPreset('gpt2-layer', { tp: 4 });
    const { plan } = await makePlan(c);
    expect(collectives(plan.ops, 'forward')).toEqual(['attn.reduce:allReduce', 'mlp.reduce:allReduce']);
    expect(collectives(plan.ops, 'backward')).toEqual(['mlp.dgrad.reduce:allReduce', 'attn.dgrad.reduce:allReduce']);
    for (const o of plan.ops.filter(isCollectiveOp)) {
      expect(o.collective.payloadBytes).toBe(c.s * c.b * c.h * 4);
      expect(o.collective.ringBytesSent).toBe((2 * 3 * c.s * c.b * c.h * 4) / 4);
    }
  });

  test('with SP each all-reduce becomes a reduce-scatter plus an all-gather of the same payload', async () => {
    const c = configFromPreset('gpt2-layer', { tp: 4, sp: true });
    const { plan } = await makePlan(c);
    expect(collectives(plan.ops, 'forward')).toEqual([
      'ln1.gather:allGather',
      'attn.reduce:reduceScatter',
      'ln2.gather:allGather',
      'mlp.reduce:reduceScatter',
    ]);
    expect(collectives(plan.ops, 'backward')).toEqual([
      'mlp.reduce.backward:allGather',
      'ln2.regather:allGather',
      'mlp.dgrad.reduce:reduceScatter',
      'attn.reduce.backward:allGather',
      'ln1.regather:allGather',
      'attn.dgrad.reduce:reduceScatter',
    ]);
    // finalize_model_grads: one coalesced all-reduce of [dg1 | dg2] after everything of backward.
    expect(collectives(plan.ops, 'finalize')).toEqual(['norm.grads.reduce:allReduce']);
    const fin = plan.ops.find((o) => o.name === 'norm.grads.reduce')!;
    expect(collectiveOf(fin).payloadBytes).toBe(2 * c.h * 4);
    expect(plan.ops.filter((o) => o.phase === 'backward').every((o) => o.index < fin.index)).toBe(true);
    expect(plan.ops.filter((o) => o.phase === 'finalize').map((o) => o.name)).toEqual([
      'norm.grads.flatten.g1',
      'norm.grads.flatten.g2',
      'norm.grads.reduce',
      'norm.grads.unflatten.g1',
      'norm.grads.unflatten.g2',
    ]);
    const big = plan.ops.filter(isCollectiveOp).filter((o) => o.collective.op !== 'allReduce');
    for (const o of big) expect(o.collective.payloadBytes).toBe(c.s * c.b * c.h * 4);
  });

  test('column-parallel GEMMs shrink N to N/t and row-parallel ones K to K/t', async () => {
    const c = configFromPreset('gpt2-layer', { tp: 4 });
    const { plan } = await makePlan(c);
    const g = (name: string) => gemmOf(plan.ops.find((o) => o.name === name)!);
    expect(g('qkv.q')).toMatchObject({ M: 32, N: 768 / 4, K: 768 });
    expect(g('mlp.gate')).toMatchObject({ M: 32, N: 3072 / 4, K: 768 });
    expect(g('mlp.down')).toMatchObject({ M: 32, N: 768, K: 3072 / 4 });
    expect(g('attn.proj')).toMatchObject({ M: 32, N: 768, K: 768 / 4 });
    expect(g('attn.scores')).toMatchObject({ M: 32, N: 32, K: 64, batch: 3 });
  });

  test('with t = 1 there is no collective at all', async () => {
    const { plan } = await makePlan(configFromPreset('llama-gqa', { tp: 1 }));
    expect(plan.ops.filter((o) => o.kind === 'collective')).toEqual([]);
  });

  test('an illegal configuration is refused before planning', async () => {
    await expect(makePlan(configFromPreset('gpt2-layer', { tp: 8 }))).rejects.toThrow(/heads/);
  });
});

test("the dgrad reduction is recorded before the wgrad GEMMs that may overlap it (Megatron's order)", async () => {
  const { plan } = await makePlan(configFromPreset('gpt2-layer', { tp: 2 }));
  const names = plan.ops.map((o) => o.name);
  expect(names.indexOf('mlp.dgrad.reduce')).toBeLessThan(names.indexOf('mlp.gate.wgrad'));
  expect(names.indexOf('attn.dgrad.reduce')).toBeLessThan(names.indexOf('qkv.q.wgrad'));
});
