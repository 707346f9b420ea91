import { describe, expect, test } from 'vitest';
import type { SweepDegree } from '../../../src/schedule/sweep-degree.ts';
import type { SweepReport } from '../../../src/session/sweep.ts';
import { configFromPreset, type LayerConfig } from '../../../src/parallel/config.ts';
import { makePlan } from '../../../src/parallel/plan.ts';
import { gemmOf } from '../../../src/parallel/plan-types.ts';
import { gemmDegrees, gemmEfficiency } from '../../../src/schedule/gemm-efficiency.ts';
import { sweepDegree } from './sweep-degree.ts';

/** A sweep degree from the real plan with made-up speeds: `gflops` for every GEMM, and a given step. */
async function degree(
  c: LayerConfig,
  gflops: number,
  step: { computeMs: number; commMs: number; exposedMs: number },
): Promise<SweepDegree> {
  const { plan } = await makePlan(c);
  return sweepDegree(plan, (o) => gemmOf(o).flops / gflops / 1e6, step);
}

describe('GEMM efficiency across the degrees of a sweep', () => {
  test("names each GEMM's split from the plan: column-parallel, row-parallel, or per-head attention", async () => {
    const { plan } = await makePlan(configFromPreset('llama-gqa', { tp: 2 }));
    const d = await degree(plan.config, 1, { computeMs: 1, commMs: 0, exposedMs: 0 });
    const eff = gemmEfficiency({ degrees: [d] }, false);
    const split = (name: string) => eff.gemms.find((g) => g.name === name)?.split;
    expect(['qkv.q', 'qkv.k.wgrad', 'mlp.gate', 'mlp.up.dgrad', 'logits'].map(split)).toEqual([
      'column',
      'column',
      'column',
      'column',
      'column',
    ]);
    expect(['attn.proj', 'mlp.down', 'mlp.down.wgrad'].map(split)).toEqual(['row', 'row', 'row']);
    expect(['attn.scores', 'attn.context.vgrad'].map(split)).toEqual(['heads', 'heads']);
  });

  test('skips the degrees a model cannot take and says why (the classroom has 4 heads: no t = 8)', () => {
    const r = gemmDegrees(configFromPreset('classroom'));
    expect(r.run).toEqual([1, 2, 4]);
    expect(r.skipped.map((s) => s.t)).toEqual([8]);
    expect(r.skipped[0].reasons.join(' ')).toMatch(/heads/);
    expect(gemmDegrees(configFromPreset('llama-gqa')).run).toEqual([1, 2, 4, 8]);
  });

  test('column-parallel forward GEMMs keep M and K and get N/t; row-parallel ones get K/t (llama-gqa, t = 1…8)', async () => {
    const degs = await Promise.all(
      [1, 2, 4, 8].map((tp) =>
        degree(configFromPreset('llama-gqa', { tp }), 10, { computeMs: 8 / tp, commMs: 1, exposedMs: 0.5 }),
      ),
    );
    const eff = gemmEfficiency({ degrees: degs }, false);
    const fwd = (n: string) => eff.gemms.find((g) => g.name === n)!.byDegree;
    for (const name of ['mlp.gate', 'mlp.up', 'logits']) {
      const g = fwd(name);
      expect(g.map((d) => d.t)).toEqual([1, 2, 4, 8]);
      g.forEach((d) => expect([d.M, d.N * d.t, d.K], `${name} t=${d.t}`).toEqual([g[0].M, g[0].N, g[0].K]));
    }
    for (const name of ['attn.proj', 'mlp.down']) {
      const g = fwd(name);
      g.forEach((d) => expect([d.M, d.N, d.K * d.t], `${name} t=${d.t}`).toEqual([g[0].M, g[0].N, g[0].K]));
    }
    // 2 KV groups: at t = 1, 2 linear_qkv runs as Q, K, V GEMMs of whole groups; at t = 4, 8 (groups < t)
    // as one GEMM over an even W/t slice, W = (8 + 2·2)·32 = 384, measured against its own lowest degree.
    expect(fwd('qkv.q').map((d) => [d.t, d.N])).toEqual([
      [1, 256],
      [2, 128],
    ]);
    expect(fwd('qkv.k').map((d) => d.N)).toEqual([64, 32]);
    expect(fwd('qkv').map((d) => [d.t, d.N])).toEqual([
      [4, 96],
      [8, 48],
    ]);
    expect(fwd('qkv')[0].efficiency).toBe(1);
    // Equal GFLOP/s everywhere: efficiency 1, per-rank time exactly ideal where the GEMM shrinks by t.
    fwd('mlp.gate').forEach((d) => expect(d.efficiency).toBeCloseTo(1, 12));
    fwd('mlp.gate').forEach((d) => expect(d.timeOverIdeal).toBeCloseTo(1, 12));
    expect(fwd('qkv')[1].timeOverIdeal).toBeCloseTo(1, 12);
    // Step: compute 8/t ms + 0.5 ms exposed → speed-up 8.5/(8/t + 0.5), share 0.5/step.
    expect(eff.steps.map((s) => s.speedup)).toEqual([1, 2, 4, 8].map((t) => 8.5 / (8 / t + 0.5)));
    expect(eff.steps.map((s) => s.commShare)).toEqual([1, 2, 4, 8].map((t) => 0.5 / (8 / t + 0.5)));
    expect(eff.steps.map((s) => s.computeSpeedup)).toEqual([1, 2, 4, 8]);
    expect(eff.steps[0].comm).toBe('modeled (pcie-gen3)');
  });

  test('efficiency is GFLOP/s at t over GFLOP/s at t = 1', async () => {
    const c = configFromPreset('classroom');
    const report: SweepReport = {
      adapter: 'x',
      note: '',
      degrees: [
        await degree({ ...c, tp: 1 }, 20, { computeMs: 1, commMs: 0, exposedMs: 0 }),
        await degree({ ...c, tp: 2 }, 5, { computeMs: 1, commMs: 0, exposedMs: 0 }),
      ],
    };
    const g = gemmEfficiency(report, true).gemms.find((r) => r.name === 'mlp.down')!;
    expect(g.byDegree.map((d) => d.efficiency)).toEqual([1, 0.25]);
    expect(g.byDegree[1].timeOverIdeal).toBeCloseTo(4, 12); // 4× slower per FLOP: half the work takes 2×, ideal is ½×
  });
});
