import { describe, expect, test } from 'vitest';
import { accountPlan } from '../../../../src/accounting/accounting.ts';
import { configFromPreset } from '../../../../src/parallel/config.ts';
import { makePlan } from '../../../../src/parallel/plan.ts';
import { boundaries, memoryGroups, rankRange, rangeText } from '../../../../src/ui/shell/shapes-model.ts';

describe('boundaries', () => {
  test('without SP the hidden state is replicated [s, b, h] and the row-parallel outputs are partial sums', async () => {
    const { plan } = await makePlan(configFromPreset('classroom', { tp: 2 }));
    const b = boundaries(plan);
    expect(b.find((x) => x.op === 'attn.reduce')).toMatchObject({
      layout: 'replicated',
      symbolic: '[s, b, h]',
      shape: [8, 1, 16],
    });
    expect(b.find((x) => x.op === 'attn.proj')).toMatchObject({ layout: 'partial-sums' });
    expect(b.find((x) => x.op === 'qkv.q')).toMatchObject({ layout: 'split-last', shape: [8, 1, 2, 4] });
    expect(b.some((x) => x.op === 'ln1.gather')).toBe(false);
  });

  test('with SP the hidden state is sequence-sharded [s/t, b, h] and gathered before each column-parallel GEMM', async () => {
    const { plan } = await makePlan(configFromPreset('classroom', { tp: 2, sp: true }));
    const b = boundaries(plan);
    expect(b.find((x) => x.op === 'attn.reduce')).toMatchObject({
      layout: 'sequence-sharded',
      symbolic: '[s/t, b, h]',
      shape: [4, 1, 16],
    });
    expect(b.find((x) => x.op === 'ln1.gather')).toMatchObject({ layout: 'replicated', shape: [8, 1, 16] });
  });

  test('the page’s MoE layer: the dense MLP’s and the vocabulary’s boundaries left out, the attention’s and the norms’ kept', async () => {
    const { plan } = await makePlan(configFromPreset('classroom', { tp: 2, sp: true }));
    const all = boundaries(plan).map((x) => x.label);
    const moe = boundaries(plan, { moeLayer: true }).map((x) => x.label);
    const left = ['MLP input (all-gathered)', 'gate / up (column-parallel)', 'down (row-parallel)'];
    const vocab = ['embedding output (after g)', 'output-layer input (all-gathered)'];
    expect(all).toEqual(expect.arrayContaining([...left, ...vocab]));
    for (const l of [...left, ...vocab]) expect(moe).not.toContain(l);
    // the attention's collective after its projection stays; the MLP's after down goes
    expect(all.filter((l) => l.startsWith('after g'))).toHaveLength(2);
    expect(moe.filter((l) => l.startsWith('after g'))).toHaveLength(1);
    expect(moe).toEqual(
      expect.arrayContaining(['RMSNorm 1 output', 'output projection (row-parallel)', 'RMSNorm 2 output']),
    );
  });

  test('at t = 1 every activation is whole and no shape mentions t', async () => {
    const { plan } = await makePlan(configFromPreset('gpt2-layer', { tp: 1 }));
    const b = boundaries(plan);
    expect(b.length).toBeGreaterThan(5);
    expect(b.every((x) => x.layout === 'replicated' && !x.symbolic.includes('/t'))).toBe(true);
    expect(b[0].op).toBe('ln1');
  });
});

describe('memoryGroups', () => {
  test('ranks with the same memory are merged into one row', async () => {
    const { plan } = await makePlan(configFromPreset('llama-gqa', { tp: 4 }));
    const groups = memoryGroups(accountPlan(plan));
    expect(groups).toHaveLength(1);
    expect(rankRange(groups[0].ranks)).toBe('ranks 0–3');
    expect(rankRange([2])).toBe('rank 2');
    expect(rangeText([4, 8])).toBe('4–7');
    expect(rangeText([0, 0])).toBe('—');
  });
});

describe('boundaries with fewer KV groups than ranks', () => {
  test('llama-gqa at t = 4 shows linear_qkv’s [s, b, W/t] slice and the all-gathered [s, b, W], W = (8 + 2·2)·32', async () => {
    const { plan } = await makePlan(configFromPreset('llama-gqa', { tp: 4 }));
    const b = boundaries(plan);
    expect(b.find((x) => x.symbolic === '[s, b, W/t]')).toMatchObject({ layout: 'split-last', shape: [64, 1, 96] });
    expect(b.find((x) => x.symbolic === '[s, b, W]')).toMatchObject({ layout: 'replicated', shape: [64, 1, 384] });
  });
});
