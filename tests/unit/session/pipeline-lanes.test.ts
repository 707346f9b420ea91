import { describe, expect, test } from 'vitest';
import type { TraceEvent } from '../../../src/core/trace-event.ts';
import { pipelinePasses } from '../../../src/mesh/pipeline-schedules.ts';
import type { MeshCoords } from '../../../src/mesh/rank-layout.ts';
import type { PassSpan } from '../../../src/parallel/pipeline-step.ts';
import { simulatePipeline } from '../../../src/projection/pipeline/pipeline-schedule.ts';
import { dependencyArrows, idleGaps, measuredChart, projectedChart } from '../../../src/session/pipeline-lanes.ts';

const at = (tp: number, pp: number, dp = 0): MeshCoords => ({ tp, cp: 0, dp, pp, etp: tp, ep: 0, edp: 0 });

// t 2 × p 2, m 2, 1F1B: each pass 10 ms, on each stage's ranks at the times the schedule gives with
// free p2p (stage 0: F0 F1 B0 B1 at 0 10 30 50; stage 1: F0 B0 F1 B1 at 10 20 30 40), shifted by 1000 ms
// (the shared clock's origin is not the step's).
const t0 = 1000;
const spansOf = (stage: number): PassSpan[] => {
  const starts = stage === 0 ? [0, 10, 30, 50] : [10, 20, 30, 40];
  return pipelinePasses('1f1b', { p: 2, v: 1, m: 2 })[stage]!.map((x, k) => ({
    ...x,
    t0: t0 + starts[k]!,
    t1: t0 + starts[k]! + 10,
  }));
};
const places = [at(0, 0), at(1, 0), at(0, 1), at(1, 1)];
const ev = (rank: number, e: Partial<TraceEvent>): TraceEvent => ({
  rank,
  stream: 'comm',
  op: 'x',
  shape: [],
  bytes: 0,
  t0: t0,
  t1: t0,
  phases: [],
  ...e,
});
// Each TP rank of stage 0 sends activation 0 to its peer on stage 1 (global rank r → r + 2); one TP all-reduce on rank 3.
const trace: TraceEvent[] = [0, 1].flatMap((r) => {
  const p2p = {
    carries: 'activation',
    from: r,
    to: r + 2,
    fromStage: 0,
    toStage: 1,
    virtualStage: 0,
    microBatch: 0,
    tensor: 'act.0.0',
  } as const;
  return [
    ev(r, { op: 'p2p.send', t0: t0 + 10, t1: t0 + 11, p2p: { ...p2p, kind: 'send' } }),
    ev(r + 2, { op: 'p2p.recv', t0: t0 + 9, t1: t0 + 10.5, p2p: { ...p2p, kind: 'recv' } }),
  ];
});
trace.push(ev(3, { op: 'allReduce', t0: t0 + 12, t1: t0 + 13 }));
const run = { p: 2, v: 1, places, spans: places.map((c) => spansOf(c.pp)), trace };

describe('a pipeline step as lanes', () => {
  test('collapsed: one lane per stage from its TP rank 0, times from the first pass, one arrow per message', () => {
    const d = measuredChart(run);
    expect(d.rows.map((r) => [r.stage, r.tpRank])).toEqual([
      [0, undefined],
      [1, undefined],
    ]);
    expect(d.rows[1]!.blocks.map((b) => `${b.pass[0]}${b.microBatch}@${b.t0}`)).toEqual([
      'f0@10',
      'b0@20',
      'f1@30',
      'b1@40',
    ]);
    expect(d.arrows).toEqual([{ from: d.rows[0], to: d.rows[1], t0: 10, t1: 10.5 }]);
    expect(d.spanMs).toBe(60);
    expect(d.rows.every((r) => r.comm.length === 0)).toBe(true);
    // Stage 1's idle: before its first forward and after its last backward.
    expect(idleGaps(d.rows[1]!.blocks, d.spanMs)).toEqual([
      { t0: 0, t1: 10 },
      { t0: 50, t1: 60 },
    ]);
  });

  test("opened: the stage's TP ranks each get a lane with their TP collectives and their own arrow", () => {
    const d = measuredChart(run, 1);
    expect(d.rows.map((r) => [r.stage, r.tpRank])).toEqual([
      [0, undefined],
      [1, 0],
      [1, 1],
    ]);
    expect(d.rows[2]!.comm).toEqual([expect.objectContaining({ t0: 12, t1: 13 })]);
    expect(d.arrows.map((a) => [d.rows.indexOf(a.from), d.rows.indexOf(a.to)])).toEqual([
      [0, 1],
      [0, 2],
    ]);
  });

  test("the projection's run: one arrow per p2p send it counts, each from the producer's end to the consumer's start", () => {
    const sim = simulatePipeline({ p: 4, v: 2, m: 8, forwardMs: () => 1, backwardMs: () => 2, p2pMs: 0.5 });
    const d = projectedChart(sim);
    expect(d.arrows).toHaveLength(sim.p2pSends);
    for (const a of d.arrows) expect(a.t1 - a.t0).toBeGreaterThanOrEqual(0.5 - 1e-9);
    expect(dependencyArrows(d.p, d.v, d.rows)).toEqual(d.arrows);
  });
});
