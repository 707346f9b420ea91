import { describe, expect, test } from 'vitest';
import { configFromPreset, type LayerConfig } from '../../../src/parallel/config.ts';
import { compareWithReference, referenceConfig } from '../../../src/parallel/oracle.ts';
import { runInProcess } from '../../../src/parallel/run-in-process.ts';
import { stepInputs } from '../../../src/parallel/step-data.ts';

async function oracle(c: LayerConfig) {
  const inputs = stepInputs(c);
  const ref = await runInProcess(referenceConfig(c), inputs);
  const got = await runInProcess(c, inputs);
  return compareWithReference(c, ref, got);
}

const describeReport = (r: Awaited<ReturnType<typeof oracle>>) =>
  r.entries
    .filter((e) => !e.pass)
    .map((e) => `${e.tensor}: ${e.maxAbs.toExponential(2)} > ${e.tol.toExponential(2)}`)
    .join('; ');

describe('the layer in Node (CPU twins, in-process collectives) matches TP=1', () => {
  for (const tp of [1, 2, 4]) {
    for (const sp of [false, true]) {
      test(`classroom preset at t=${tp}${sp ? ' with SP' : ''}: output, loss and every gradient`, async () => {
        const r = await oracle(configFromPreset('classroom', { tp, sp }));
        expect(r.pass, describeReport(r)).toBe(true);
        expect(r.entries.map((e) => e.tensor)).toEqual([
          'y',
          'loss',
          'dwqkv',
          'dwo',
          'dg1',
          'dg2',
          'dwfc1',
          'dwdown',
          'demb',
          'dwout',
        ]);
      });
    }
  }

  test('GQA with KV groups replicated (groups < t) at t=4 with SP, batch 2, no vocabulary', async () => {
    const sizes = { s: 12, b: 2, h: 32, heads: 8, groups: 2, ffn: 48, vocab: 0 };
    const r = await oracle({ ...configFromPreset('classroom'), ...sizes, tp: 4, sp: true });
    expect(r.pass, describeReport(r)).toBe(true);
    expect(r.entries.map((e) => e.tensor)).toContain('dx');
  });

  test('multi-query attention at t=3 with a vocabulary padded from 31 to 33', async () => {
    const sizes = { s: 6, b: 1, h: 24, heads: 6, groups: 1, ffn: 36, vocab: 31 };
    const r = await oracle({ ...configFromPreset('classroom'), ...sizes, tp: 3, sp: true });
    expect(r.pass, describeReport(r)).toBe(true);
  });

  test('skipping the SP norm-gradient all-reduce makes the oracle flag exactly the norm weights', async () => {
    const r = await oracle(configFromPreset('classroom', { tp: 2, sp: true, skipSpNormGradAllReduce: true }));
    expect(r.pass).toBe(false);
    expect(r.entries.filter((e) => !e.pass).map((e) => e.tensor)).toEqual(['dg1', 'dg2']);
  });
});
