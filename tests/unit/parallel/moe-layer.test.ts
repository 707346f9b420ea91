import { describe, expect, test } from 'vitest';
import type { HostTensor } from '../../../src/comm/host-tensor.ts';
import { CpuBackend } from '../../../src/parallel/backend-cpu.ts';
import { LayerComm } from '../../../src/parallel/layer-comm.ts';
import { moeGrid, moeLayerGridArgs, type MoeGridPoint } from '../../../src/parallel/moe-grid.ts';
import { moeLayerWeights, moeLayerStep, type MoeLayerRankResult } from '../../../src/parallel/moe-layer.ts';
import {
  moeLayerOracle,
  moeLayerProblem,
  moeLayerWant,
  rankData,
  type MoeLayerOracleReport,
} from '../../../src/parallel/moe-layer-oracle.ts';
import { moeMeshDegrees, moeWorld } from '../../../src/parallel/moe-layout.ts';
import { rankOwnership } from '../../../src/parallel/ownership.ts';
import { rankWeightArrays } from '../../../src/parallel/step-data.ts';
import type { WeightSet } from '../../../src/parallel/weights.ts';
import { moeLayerRunErrors } from '../../../src/session/moe-layer-run.ts';
import { makeMesh } from '../comm/mesh-groups.ts';
import type { TracePass } from '../../../src/core/trace-event.ts';
import { TraceRecorder } from '../../../src/core/trace-recorder.ts';
import { moeLayerPassOrder } from '../../moe-fixtures.ts';

// The transformer layer with the MoE block in place of the dense MLP on in-process ranks (CPU
// twins, float32 storage between ops as on the GPU) equals one device in float64
// (src/parallel/moe-layer-oracle.ts) over the grid EP {1, 2, 4} × ETP {1, 2} × TP {1, 2} with SP ×
// E {4, 8} × k {1, 2} × {dropless, capacity 1} × {alltoall, allgather}: y, dx, the block's input,
// the attention half's gradients (wqkv, wo, g1, g2), and the block's routing, aux and z losses,
// router, experts' and shared expert's gradients.
// Tolerance 2e-6 · max(1, max|oracle|): every op's result is stored in float32 (relative 2^-24 each) along a
// chain of a few dozen ops (norms, attention, the block's three GEMM-like stages, the backward);
// the errors seen are below 5e-7. The logit bound: the rank's MoE input error × h × max|W_r| plus
// 1e-6 (one float32 rounding of logits |l| < 8).
const sizes = { s: 16, b: 1, h: 16, heads: 4, groups: 2, ffn: 6, seed: 40 };
const tol = 1e-5;

/** Every rank's MoE layer at grid point `pt` on an in-process mesh; the oracle's report and the results. */
async function runPoint(
  pt: MoeGridPoint,
  opts: { shared?: number; vocab?: number; traces?: readonly TraceRecorder[] } = {},
): Promise<{ report: MoeLayerOracleReport; results: MoeLayerRankResult[] }> {
  const a = moeLayerGridArgs(pt, sizes);
  const mc = opts.shared ? { ...a.config, moeSharedExpertIntermediateSize: opts.shared } : a.config;
  const l = a.layout;
  const c = { ...a.layer, vocab: opts.vocab ?? 0 };
  const p = moeLayerProblem(c, mc, l);
  const m = makeMesh('in-process', moeMeshDegrees(l));
  const N = moeWorld(l);
  const coords = Array.from({ length: N }, (_, r) => m.mesh.coords(r));
  const results = await Promise.all(
    coords.map(async (q, r) => {
      const be = new CpuBackend();
      const own = rankOwnership(c)[q.tp]!;
      const shards = rankWeightArrays(c, own);
      const w: WeightSet<HostTensor> = {};
      for (const n of moeLayerWeights(c)) w[n] = be.tensor(n, shards[n]!.shape, shards[n]!.data);
      const lc = new LayerComm(m.comm(r, 'tp'), (t: HostTensor) => t.shape);
      const groups = {
        ep: m.comm(r, 'ep'),
        etp: m.comm(r, 'etp'),
        tp: m.comm(r, 'tp'),
        dp: m.comm(r, 'dp'),
        edp: m.comm(r, 'edp'),
      };
      const rec = opts.traces?.[r];
      const trace = rec && { sink: rec, rank: r, pass: (x: TracePass) => rec.setPass(x) };
      return moeLayerStep(be, lc, c, own, w, groups, mc, p.mw, rankData(p, q), {
        dispatcher: l.dispatcher,
        ...(trace && { trace }),
      });
    }),
  );
  m.close();
  const want = await moeLayerWant(p, coords);
  return { report: moeLayerOracle(p, want, results, coords, tol, 1e-6), results };
}

describe('the MoE transformer layer on in-process ranks over the whole grid', () => {
  test.each(moeGrid)('at %o equals one device', async (pt) => {
    const { report, results } = await runPoint(pt);
    expect(report.failures).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.moe.sameRouting).toBe(true);
    if (pt.capacity !== undefined)
      expect(
        results.reduce((n, r) => n + r.moe.dropped, 0),
        'the capacity drops picks',
      ).toBeGreaterThan(0);
  });
});

describe('the MoE transformer layer with a shared expert', () => {
  const points: MoeGridPoint[] = [
    { ep: 2, etp: 1, tp: 2, dispatcher: 'alltoall', E: 8, k: 2 },
    { ep: 4, etp: 2, tp: 2, dispatcher: 'allgather', E: 8, k: 2, capacity: 1 },
    { ep: 1, etp: 1, tp: 1, dispatcher: 'alltoall', E: 4, k: 1 },
  ];
  test.each(points)('at %o equals one device, the shared expert’s gradients too', async (pt) => {
    const { report } = await runPoint(pt, { shared: 4 });
    expect(report.failures).toEqual([]);
    expect(report.moe.checks.some((x) => x.what.includes('shared dfc1'))).toBe(true);
  });
});

describe('the MoE layer marks its passes on the rank’s trace', () => {
  test('the attention and the expert GEMMs forward, their backward after the loss, in that order on every rank', async () => {
    const pt: MoeGridPoint = { ep: 2, etp: 1, tp: 2, dispatcher: 'alltoall', E: 4, k: 2 }; // lcm(2, 2) = 2 ranks
    const traces = [0, 1].map(() => new TraceRecorder());
    const { report } = await runPoint(pt, { vocab: 30, traces });
    expect(report.failures).toEqual([]);
    for (const t of traces) expect(t.peek().map((e) => [e.op, e.phase])).toEqual(moeLayerPassOrder);
  });
});

describe('the MoE layer refuses what it cannot run', () => {
  const a = moeLayerGridArgs({ ep: 2, etp: 1, tp: 2, dispatcher: 'alltoall', E: 4, k: 2 }, sizes);
  test('TP without SP and a layer whose TP is not the layout’s, each named', () => {
    const noSp = moeLayerRunErrors({ layer: { ...a.layer, sp: false }, config: a.config, layout: a.layout });
    expect(noSp).toContainEqual(expect.stringMatching(/moe_layer\.py:629-633/));
    expect(noSp).toContainEqual(expect.stringMatching(/^the layer has tp 2, the layout tp 2 with SP/));
    expect(moeLayerRunErrors({ layer: a.layer, config: a.config, layout: a.layout })).toEqual([]);
  });
});

describe('the MoE transformer layer with a vocabulary (embedding, output layer, cross entropy)', () => {
  const points: MoeGridPoint[] = [
    { ep: 2, etp: 1, tp: 2, dispatcher: 'alltoall', E: 8, k: 2, capacity: 1 },
    { ep: 4, etp: 2, tp: 2, dispatcher: 'allgather', E: 4, k: 1 },
    { ep: 1, etp: 1, tp: 1, dispatcher: 'alltoall', E: 4, k: 2 },
  ];
  test.each(points)('at %o equals one device: the loss, dEmb and dW_out too', async (pt) => {
    const { report, results } = await runPoint(pt, { vocab: 30 });
    expect(report.failures).toEqual([]);
    expect(report.checks.some((x) => x.what.endsWith(' loss'))).toBe(true);
    expect(report.checks.some((x) => x.what.endsWith(' demb'))).toBe(true);
    expect(report.checks.some((x) => x.what.endsWith(' dwout'))).toBe(true);
    expect(results.every((r) => r.loss !== undefined && r.dx.length === 0)).toBe(true);
  });
});
