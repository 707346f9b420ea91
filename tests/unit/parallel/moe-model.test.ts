import { describe, expect, test } from 'vitest';
import type { HostTensor } from '../../../src/comm/host-tensor.ts';
import { CpuBackend } from '../../../src/parallel/backend-cpu.ts';
import { LayerComm } from '../../../src/parallel/layer-comm.ts';
import { moeLayerGridArgs, type MoeGridPoint } from '../../../src/parallel/moe-grid.ts';
import { moeLayerPattern, parseMoeLayerFreq, type MoeLayerFreq } from '../../../src/parallel/moe-layer-freq.ts';
import { moeLayerProblem, rankShard } from '../../../src/parallel/moe-layer-oracle.ts';
import { moeMeshDegrees, moeWorld } from '../../../src/parallel/moe-layout.ts';
import { moeModelStep } from '../../../src/parallel/moe-model.ts';
import { moeModelOracle, moeModelWant } from '../../../src/parallel/moe-model-oracle.ts';
import { rankOwnership } from '../../../src/parallel/ownership.ts';
import { makeMesh } from '../comm/mesh-groups.ts';
import type { TracePass } from '../../../src/core/trace-event.ts';
import { TraceRecorder } from '../../../src/core/trace-recorder.ts';
import { moeLayerPassOrder } from '../../moe-fixtures.ts';

// L layers on in-process ranks (CPU twins, float32 storage between ops), each dense or MoE as
// --moe-layer-freq says, equal one device in float64 over L layers (src/parallel/moe-model-oracle.ts):
// y, dx, every layer's gradient shards, every MoE layer's block (routing, aux and z, router,
// experts). Tolerance 1e-5 · max(1, max|oracle|) as the one-layer test (tests/unit/parallel/moe-layer.test.ts):
// float32 storage through a longer chain of O(1) values, errors seen below 1e-6.
const sizes = { s: 16, b: 1, h: 16, heads: 4, groups: 2, ffn: 6, seed: 40 };
const tol = 1e-5;

async function runModel(pt: MoeGridPoint, freq: MoeLayerFreq, L: number, traces?: readonly TraceRecorder[]) {
  const a = moeLayerGridArgs(pt, sizes);
  const pat = moeLayerPattern(freq, L);
  if (!('pattern' in pat)) throw new Error(pat.error);
  const l = a.layout;
  const c = a.layer;
  const p = moeLayerProblem(c, a.config, l);
  const m = makeMesh('in-process', moeMeshDegrees(l));
  const coords = Array.from({ length: moeWorld(l) }, (_, r) => m.mesh.coords(r));
  const results = await Promise.all(
    coords.map((q, r) =>
      moeModelStep(
        new CpuBackend(),
        new LayerComm(m.comm(r, 'tp'), (t: HostTensor) => t.shape),
        c,
        rankOwnership(c)[q.tp]!,
        { ep: m.comm(r, 'ep'), etp: m.comm(r, 'etp'), tp: m.comm(r, 'tp'), dp: m.comm(r, 'dp'), edp: m.comm(r, 'edp') },
        a.config,
        pat.pattern,
        rankShard(c, p.x[q.dp]!, q.tp),
        rankShard(c, p.dy[q.dp]!, q.tp),
        {
          dispatcher: l.dispatcher,
          ...(traces && {
            trace: { sink: traces[r]!, rank: r, pass: (x: TracePass) => traces[r]!.setPass(x) },
          }),
        },
      ),
    ),
  );
  m.close();
  const problem = { c, mc: a.config, layout: l, pattern: pat.pattern, x: p.x, dy: p.dy };
  const want = await moeModelWant(problem, coords);
  return { pattern: pat.pattern, report: moeModelOracle(problem, want, results, coords, tol, 1e-6) };
}

describe('--moe-layer-freq as Megatron reads it', () => {
  test('an integer N makes every N-th layer MoE, from layer 0 (gpt_layer_specs.py:647-650)', () => {
    expect(moeLayerPattern(2, 5)).toEqual({ pattern: [true, false, true, false, true] });
    expect(moeLayerPattern(1, 3)).toEqual({ pattern: [true, true, true] });
  });
  test('a list expression with + and * is the per-layer pattern (arguments.py:326 moe_freq_type)', () => {
    expect(parseMoeLayerFreq('([1]*3+[0]*1)*3')).toEqual({ freq: [1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0] });
    expect(parseMoeLayerFreq('([0]+[1]*2)')).toEqual({ freq: [0, 1, 1] });
    expect(parseMoeLayerFreq('[1, 0, 1]')).toEqual({ freq: [1, 0, 1] });
    expect(parseMoeLayerFreq('3')).toEqual({ freq: 3 });
  });
  test('bad input is refused naming the flag, where, and what to write', () => {
    for (const bad of ['0', '[2]', '[1]*', '([1]', 'x', '[1]*100000', '[]'])
      expect((parseMoeLayerFreq(bad) as { error: string }).error, bad).toMatch(/^--moe-layer-freq is "/);
    expect(moeLayerPattern([1, 0], 3)).toEqual({
      error: expect.stringMatching(/gives 2 layers, the model has 3 .*Invalid length of moe_layer_pattern/),
    });
  });
});

describe('L layers with MoE and dense MLPs on in-process ranks', () => {
  const cases: [MoeGridPoint, MoeLayerFreq, number][] = [
    [{ ep: 2, etp: 1, tp: 2, dispatcher: 'alltoall', E: 8, k: 2 }, 2, 3],
    [{ ep: 4, etp: 1, tp: 2, dispatcher: 'allgather', E: 8, k: 1, capacity: 1 }, [0, 1, 1], 3],
    [{ ep: 2, etp: 2, tp: 1, dispatcher: 'alltoall', E: 4, k: 2, capacity: 1 }, [1, 0], 2],
    [{ ep: 1, etp: 2, tp: 2, dispatcher: 'allgather', E: 4, k: 2 }, 1, 2],
    [{ ep: 1, etp: 1, tp: 1, dispatcher: 'alltoall', E: 4, k: 1 }, [0, 1, 0], 3],
  ];
  test.each(cases)('at %o with --moe-layer-freq %o over %i layers equal one device', async (pt, freq, L) => {
    const { pattern, report } = await runModel(pt, freq, L);
    expect(report.failures).toEqual([]);
    expect(report.moe.map((m) => m !== null)).toEqual(pattern);
    expect(report.moe.every((m) => m === null || m.sameRouting)).toBe(true);
  });
});

describe('the L-layer model marks its passes on the rank’s trace', () => {
  test('the MoE layer’s attention and expert GEMMs forward, their backward after the dense layer’s forward and backward (its ops are not traced), on every rank', async () => {
    const pt: MoeGridPoint = { ep: 2, etp: 1, tp: 1, dispatcher: 'alltoall', E: 4, k: 2 }; // 2 ranks
    const traces = [0, 1].map(() => new TraceRecorder());
    const { report } = await runModel(pt, [1, 0], 2, traces); // layer 0 MoE, layer 1 dense
    expect(report.failures).toEqual([]);
    for (const t of traces) expect(t.peek().map((e) => [e.op, e.phase])).toEqual(moeLayerPassOrder);
  });
});
