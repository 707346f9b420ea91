import { describe, expect, test } from 'vitest';
import { configFromPreset, type LayerConfig } from '../../../../src/parallel/config.ts';
import { makePlan } from '../../../../src/parallel/plan.ts';
import { gemmOf, type LayerPlan } from '../../../../src/parallel/plan-types.ts';
import type { SweepReport } from '../../../../src/session/sweep.ts';
import { gemmEfficiency } from '../../../../src/schedule/gemm-efficiency.ts';
import { boundaries, type Boundary } from '../../../../src/ui/shell/shapes-model.ts';
import { sweepDegree } from '../../schedule/sweep-degree.ts';

// Labels are for people: the shapes panel and the GEMM view find their ops by the plan's typed
// fields (GEMM sites, weights, kinds), so relabelling every op changes only the labels they show.

const relabel = (plan: LayerPlan, tag: string): LayerPlan => ({
  ...plan,
  ops: plan.ops.map((op, i) => ({ ...op, name: `${tag}${i}` })),
});

const withoutOp = ({ op: _op, ...rest }: Boundary) => rest;

describe('the shapes panel reads what an op is, never its label', () => {
  test.each([
    ['gpt2-layer t = 4', configFromPreset('gpt2-layer', { tp: 4 }), 10],
    ['gpt2-layer t = 4 with SP (two all-gathers more)', configFromPreset('gpt2-layer', { tp: 4, sp: true }), 12],
    ['classroom t = 2 with SP and a vocabulary', configFromPreset('classroom', { tp: 2, sp: true, vocab: 64 }), 15],
    ['classroom t = 1 with a vocabulary (no collectives)', configFromPreset('classroom', { tp: 1, vocab: 64 }), 10],
  ] as [string, LayerConfig, number][])('%s: every op relabelled gives the same %i boundaries', async (_, c, n) => {
    const { plan } = await makePlan(c);
    const a = boundaries(plan);
    const b = boundaries(relabel(plan, 'op'));
    expect(a).toHaveLength(n);
    expect(b.map(withoutOp)).toEqual(a.map(withoutOp));
    // Each boundary still points at the same op (opIndex above), and shows that op's new label.
    expect(b.map((x) => x.op)).toEqual(a.map((x) => `op${x.opIndex}`));
  });
});

/** Each GEMM at its own made-up speed (so that a wrong match shows). */
const degree = (plan: LayerPlan) =>
  sweepDegree(plan, (o) => (gemmOf(o).flops / 1e9) * (1 + (o.index % 7)), { computeMs: 1, commMs: 1, exposedMs: 1 });

describe('the GEMM view matches a GEMM across degrees by what it is, never by its label', () => {
  test('llama-gqa t = 1, 2, 4, 8 (QKV all-gathered at 4 and 8), each degree labelled differently: the same table', async () => {
    const plans = await Promise.all(
      [1, 2, 4, 8].map(async (tp) => (await makePlan(configFromPreset('llama-gqa', { tp }))).plan),
    );
    const report = (ps: LayerPlan[]): SweepReport => ({ adapter: 'x', note: '', degrees: ps.map(degree) });
    const a = gemmEfficiency(report(plans), false);
    const b = gemmEfficiency(report(plans.map((p, i) => relabel(p, `t${i}.`))), false);
    const rows = (e: typeof a) =>
      e.gemms.map(({ name: _name, byDegree, ...row }) => ({
        ...row,
        byDegree: byDegree.map(({ name: _n, ...d }) => d),
      }));
    expect(rows(b)).toEqual(rows(a));
    // The rows are the layer's distinct GEMMs (forward, dgrad, wgrad of each product); linear_qkv is
    // the q, k, v GEMMs at t = 1, 2 (2 KV groups ≥ t) and one fused qkv GEMM at t = 4, 8 (groups < t).
    const degreesOf = (g: (typeof a.gemms)[number]) => g.byDegree.map((d) => d.t);
    for (const g of a.gemms)
      expect(degreesOf(g), `${g.site.product} ${g.site.computes}`).toEqual(
        ['q', 'k', 'v'].includes(g.site.product) ? [1, 2] : g.site.product === 'qkv' ? [4, 8] : [1, 2, 4, 8],
      );
    expect(new Set(a.gemms.map((g) => `${g.site.product} ${g.site.computes}`)).size).toBe(a.gemms.length);
    expect(a.gemms.length).toBe(33);
  });
});
