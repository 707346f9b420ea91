import { describe, expect, test } from 'vitest';
import type { TraceEvent } from '../../../../src/core/trace-event.ts';
import type { MeshCoords } from '../../../../src/mesh/rank-layout.ts';
import { configFromPreset } from '../../../../src/parallel/config.ts';
import type { DpSyncMode } from '../../../../src/parallel/dp-options.ts';
import {
  sampleElems,
  shardSampleAt,
  stageGradBuffer,
  type StageDpOutput,
  type ZeroShardSample,
} from '../../../../src/parallel/pipeline-dp.ts';
import type { PipelineModel } from '../../../../src/parallel/pipeline-model.ts';
import { stageWeightArrays } from '../../../../src/parallel/pipeline-oracle.ts';
import type { PassSpan } from '../../../../src/parallel/pipeline-step.ts';
import type { PipelineRunResult } from '../../../../src/session/pipeline-run.ts';
import { meshSteps, passOrder } from '../../../../src/ui/classroom/mesh-steps.ts';

const adam = { lr: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-2 };
const model: PipelineModel = {
  layer: configFromPreset('classroom', { tp: 1 }),
  layers: 4,
  p: 2,
  v: 1,
  m: 2,
  schedule: '1f1b',
};
const coords = (pp: number, dp: number): MeshCoords => ({ tp: 0, cp: 0, dp, pp, etp: 0, ep: 0, edp: dp });
const span = (pass: PassSpan['pass'], microBatch: number, t0: number): PassSpan => ({
  pass,
  microBatch,
  chunk: 0,
  t0,
  t1: t0 + 1,
});
// 1F1B at p 2, m 2: stage 0 warms up with p − 0 − 1 = 1 forward, stage 1 with none.
const spans = [
  [span('F', 0, 0), span('F', 1, 1), span('B', 0, 4), span('B', 1, 6)],
  [span('F', 0, 1), span('B', 0, 2), span('F', 1, 3), span('B', 1, 4)],
];
const act = Float32Array.from({ length: sampleElems }, (_, i) => i / 10);
const grad = Float32Array.from({ length: sampleElems }, (_, i) => -i / 100);
const shape = [8, 1, 16];

/** A hand-made run of p 2 × d replicas: the records a rank returns, with the layout's real sample positions. */
function run(d: number, dp?: DpSyncMode): PipelineRunResult {
  const places = Array.from({ length: 2 * d }, (_, r) => coords(r % 2, Math.floor(r / 2)));
  const outputs = places.map((c): StageDpOutput => {
    const weights = stageWeightArrays(model, c.pp, 0);
    const base = {
      tpRank: 0,
      stage: c.pp,
      losses: [],
      blockGrads: [],
      headGrads: {},
      spans: spans[c.pp]!,
      weights,
      boundaries: [{ tensor: c.pp === 0 ? 'grad.0.0' : 'act.0.0', shape, values: c.pp === 0 ? grad : act }],
    };
    if (dp !== 'distributed-optimizer') return base;
    const { layout } = stageGradBuffer(weights, d, dp);
    const size = layout.numel / d;
    const samples = Array.from({ length: d }, (_, q) => shardSampleAt(layout, q));
    // Replica r's own gradient at every shard: r + q + i/8; the mean over r is what the reduce-scatter hands shard q.
    const local = samples.map((_, q) => Float32Array.from({ length: sampleElems }, (_, i) => c.dp + q + i / 8));
    const mean = Float32Array.from({ length: sampleElems }, (_, i) => (d - 1) / 2 + c.dp + i / 8);
    const zero: ZeroShardSample = {
      numel: layout.numel,
      start: c.dp * size,
      end: (c.dp + 1) * size,
      samples,
      local,
      grad: mean,
      paramBefore: new Float32Array(sampleElems),
      paramAfter: new Float32Array(sampleElems).fill(0.5),
      m: new Float32Array(sampleElems),
      v: new Float32Array(sampleElems),
    };
    return { ...base, zero };
  });
  const sends: TraceEvent[] = [0, 1].map((j) => ({
    rank: 0,
    stream: 'comm',
    op: 'p2p.send',
    shape,
    bytes: 4 * 128,
    t0: j,
    t1: j + 1,
    phases: [],
    p2p: {
      kind: 'send',
      carries: 'activation',
      from: 0,
      to: 1,
      fromStage: 0,
      toStage: 1,
      virtualStage: 0,
      microBatch: j,
      tensor: `act.0.${j}`,
    },
  }));
  const entry = { tensor: 'loss', maxAbs: 0, maxRel: 0, refMax: 1, tol: 1, pass: true };
  return {
    model,
    replicas: d,
    ...(dp && { dp }),
    places,
    outputs,
    oracle: { entries: [entry], worst: entry, pass: true },
    measured: { spanMs: 7, busyMs: [4, 4], idleShare: [3 / 7, 3 / 7], overheadShare: [0, 0], bubbleShare: 3 / 7 },
    projected: { formulaShare: 1 / 3, formula: '(p − 1)/(m + p − 1)' },
    memory: [],
    memoryClasses: [],
    trace: sends,
  };
}

const fact = (steps: ReturnType<typeof meshSteps>, id: string, label: string) => {
  const f = steps.find((s) => s.id === id)?.facts.find((x) => x.label === label);
  if (!f) throw new Error(`no fact "${label}" in step ${id}`);
  return f.values;
};

describe('the classroom mesh steps', () => {
  test('pipeline steps with p > 1, ZeRO-1 steps only with d > 1 and the distributed optimizer', () => {
    const ids = (r: PipelineRunResult) => meshSteps(r, adam).map((s) => s.id);
    const pp = ['pp-stages', 'pp-boundary', 'pp-order', 'pp-bubble', 'pp-zb'];
    expect(ids(run(1))).toEqual(pp);
    expect(ids(run(2, 'all-reduce'))).toEqual(pp);
    expect(ids(run(2, 'distributed-optimizer'))).toEqual([
      ...pp,
      'zero-shards',
      'zero-reduce-scatter',
      'zero-adam',
      'zero-all-gather',
    ]);
  });

  test('the boundary tensors, the order and the bubble are the run’s', () => {
    const s = meshSteps(run(1), adam);
    expect(fact(s, 'pp-boundary', 'act.0.0 shape')).toEqual(shape);
    expect(fact(s, 'pp-boundary', 'act.0.0 bytes')).toEqual([4 * 8 * 16]);
    expect(fact(s, 'pp-boundary', 'act.0.0 values')).toEqual([...act]);
    expect(fact(s, 'pp-boundary', 'grad.0.0 values')).toEqual([...grad]);
    expect(fact(s, 'pp-boundary', 'p2p sends in the step (every rank)')).toEqual([2]);
    expect(fact(s, 'pp-boundary', 'p2p bytes in the step')).toEqual([1024]);
    expect(fact(s, 'pp-order', 'stage 0: forwards before its first backward')).toEqual([2]);
    expect(fact(s, 'pp-order', 'stage 1: forwards before its first backward')).toEqual([1]);
    expect(passOrder(run(1).outputs[1]!)).toBe('F0 B0 F1 B1');
    expect(fact(s, 'pp-bubble', 'measured bubble (busiest stage)')).toEqual([3 / 7]);
    expect(fact(s, 'pp-zb', 'W passes per stage')).toEqual([0, 0]);
    expect(fact(s, 'pp-zb', 'formula, ZB-H1')).toEqual([1 / 7]);
  });

  test('ZeRO-1: shard sizes, the reduce-scatter’s mean, the sharded Adam step, the all-gathered weights', () => {
    const r = run(2, 'distributed-optimizer');
    const s = meshSteps(r, adam);
    const z = r.outputs[2]!.zero!; // rank 2: stage 0 of replica 1
    expect(fact(s, 'zero-shards', 'shard elements per replica')).toEqual([z.numel / 2, z.numel / 2]);
    expect(fact(s, 'zero-shards', 'shard starts')).toEqual([0, z.numel / 2]);
    const mean = fact(s, 'zero-reduce-scatter', 'their mean');
    expect(mean).toEqual(Array.from({ length: sampleElems }, (_, i) => 1.5 + i / 8));
    expect(fact(s, 'zero-reduce-scatter', 'received by replica 1')).toEqual(mean);
    expect(fact(s, 'zero-adam', 'weight after')).toEqual(Array(sampleElems).fill(0.5));
    // The weights at shard 1's sample, read from each replica's returned weights at that parameter and element.
    const { layout, params } = stageGradBuffer(r.outputs[0]!.weights!, 2, 'distributed-optimizer');
    const at = shardSampleAt(layout, 1);
    const range = layout.params.find((x) => x.name === at.param)!;
    const p = params.get(at.param)!;
    const w = r.outputs[0]!.weights!;
    const data = p.block === undefined ? w.head[p.name]! : w.blocks.find(([l]) => l === p.block)![1][p.name]!;
    const want = [...data.data.slice(at.at - range.start, at.at - range.start + sampleElems)];
    expect(fact(s, 'zero-all-gather', 'replica 0 holds')).toEqual(want);
    expect(at.at).toBeGreaterThanOrEqual(z.numel / 2);
  });

  test('a run without the distributed optimizer’s records is named', () => {
    const r = run(2, 'distributed-optimizer');
    const bare = { ...r, outputs: r.outputs.map(({ zero: _, ...o }) => o) };
    expect(() => meshSteps(bare, adam)).toThrow(/replica 0's rank returned no distributed-optimizer record/);
  });
});
