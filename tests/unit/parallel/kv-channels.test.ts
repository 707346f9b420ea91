import { describe, expect, test } from 'vitest';
import { parameterShards } from '../../../src/accounting/parameters.ts';
import { configFromPreset, headDim, type LayerConfig } from '../../../src/parallel/config.ts';
import { compareWithReference, referenceConfig } from '../../../src/parallel/oracle.ts';
import { gemmOf } from '../../../src/parallel/plan-types.ts';
import { makePlan } from '../../../src/parallel/plan.ts';
import { runInProcess } from '../../../src/parallel/run-in-process.ts';
import { stepInputs } from '../../../src/parallel/step-data.ts';
import { validateConfig } from '../../../src/parallel/validate.ts';

// Megatron's --kv-channels (attention.py:333-334, 413-415, core_v0.19.0): Q is heads·d wide, K and V
// groups·d each, linear_proj reads heads·d and writes h. The classroom layer (s 8, b 1, h 16, 4 heads
// in 2 groups, FFN 32) with d = 8 where h / heads = 4.
const kv = (over: Partial<LayerConfig> = {}): LayerConfig => configFromPreset('classroom', { kvChannels: 8, ...over });

/** The forward GEMMs of a plan: name → [M, N, K, batch, FLOPs]. */
async function forwardGemms(c: LayerConfig): Promise<Record<string, number[]>> {
  const { plan } = await makePlan(c);
  const out: Record<string, number[]> = {};
  for (const o of plan.ops) {
    if (o.kind !== 'gemm' || o.phase !== 'forward') continue;
    const g = gemmOf(o);
    out[o.name] = [g.M, g.N, g.K, g.batch ?? 1, g.flops];
  }
  return out;
}

describe('a head width d apart from h / heads (--kv-channels)', () => {
  test('t = 1: Q [8, 4·8], K and V [8, 2·8], scores and context 4 heads of [8, 8]·d = 8, proj [8, 32] → [8, 16]; FLOPs 2·M·N·K', async () => {
    expect(headDim(kv())).toBe(8);
    const g = await forwardGemms(kv());
    expect(g['qkv.q']).toEqual([8, 32, 16, 1, 2 * 8 * 32 * 16]);
    expect(g['qkv.k']).toEqual([8, 16, 16, 1, 2 * 8 * 16 * 16]);
    expect(g['qkv.v']).toEqual([8, 16, 16, 1, 2 * 8 * 16 * 16]);
    expect(g['attn.scores']).toEqual([8, 8, 8, 4, 4 * 2 * 8 * 8 * 8]);
    expect(g['attn.context']).toEqual([8, 8, 8, 4, 4 * 2 * 8 * 8 * 8]);
    expect(g['attn.proj']).toEqual([8, 16, 32, 1, 2 * 8 * 16 * 32]);
    // The MLP does not see d.
    expect(g['mlp.down']).toEqual([8, 16, 32, 1, 2 * 8 * 16 * 32]);
    // Without --kv-channels d = 16 / 4 = 4: Q is 16 wide and proj reads 16.
    const plain = await forwardGemms(configFromPreset('classroom'));
    expect([plain['qkv.q']![1], plain['attn.proj']![2], plain['attn.scores']![2]]).toEqual([16, 16, 4]);
  });

  test('t = 2: each rank 2 heads and 1 group of d = 8 (Q [8, 16], proj reads 16); its parameters by hand', async () => {
    const g = await forwardGemms(kv({ tp: 2 }));
    expect(g['qkv.q']!.slice(0, 3)).toEqual([8, 16, 16]);
    expect(g['qkv.k']!.slice(0, 3)).toEqual([8, 8, 16]);
    expect(g['attn.proj']!.slice(0, 3)).toEqual([8, 16, 16]);
    const shapes = async (c: LayerConfig) =>
      Object.fromEntries(parameterShards((await makePlan(c)).plan, 0).map((p) => [p.name, p.shape]));
    // linear_qkv [h, (heads + 2·groups)·d] = [16, 64], linear_proj [heads·d, h] = [32, 16]; over t = 2 columns / rows.
    expect(await shapes(kv())).toMatchObject({ qkv: [16, 64], proj: [32, 16], down: [32, 16] });
    expect(await shapes(kv({ tp: 2 }))).toMatchObject({ qkv: [16, 32], proj: [16, 16] });
  });

  test('the layer runs with it on the CPU twins: t = 2 with SP and t = 4 (groups < t, QKV gathered) match t = 1', async () => {
    for (const c of [kv({ tp: 2, sp: true }), kv({ tp: 4, sp: true })]) {
      const inputs = stepInputs(c);
      const r = compareWithReference(c, await runInProcess(referenceConfig(c), inputs), await runInProcess(c, inputs));
      expect(
        r.pass,
        r.entries
          .filter((e) => !e.pass)
          .map((e) => e.tensor)
          .join(', '),
      ).toBe(true);
    }
  });

  test('h need not be a multiple of heads with it (arguments.py:1291-1293); d must be even for RoPE', () => {
    expect(validateConfig({ ...kv(), heads: 3, groups: 3 }).ok).toBe(true);
    expect(validateConfig({ ...kv(), heads: 3, groups: 3, kvChannels: undefined }).ok).toBe(false);
    const odd = validateConfig(kv({ kvChannels: 7 }));
    expect(odd.ok).toBe(false);
    if (!odd.ok) expect(odd.errors[0]!.message).toMatch(/--kv-channels \(7\) must be a whole even number/);
  });
});
