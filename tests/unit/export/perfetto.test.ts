import { describe, expect, test } from 'vitest';
import { interconnectPresets } from '../../../src/hardware/interconnect.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { makePlan } from '../../../src/parallel/plan.ts';
import { modeledCommMs, sameComputeMs } from '../../../src/schedule/durations.ts';
import type { TraceEvent } from '../../../src/core/trace-event.ts';
import { partialOverlaps, timelineToPerfetto, toPerfetto, type PerfettoTrace } from '../../../src/export/perfetto.ts';
import { scheduleStep } from '../../../src/schedule/schedule.ts';

const x = (name: string, tid: number, ts: number, dur: number) => ({ ph: 'X', name, pid: 1, tid, ts, dur });
const slice = (rank: number, stream: 'compute' | 'comm', op: string, t0: number, t1: number): TraceEvent => ({
  rank,
  stream,
  op,
  shape: [2, 3],
  bytes: 24,
  t0,
  t1,
  phases: [],
});

async function exported(tp: number): Promise<PerfettoTrace> {
  const { plan } = await makePlan(configFromPreset('classroom', { tp, sp: tp > 1 }));
  const tl = scheduleStep(
    plan,
    {
      computeMs: sameComputeMs(plan, (i) => 0.01 + i * 1e-4),
      commMs: modeledCommMs(plan, interconnectPresets['pcie-gen3']),
    },
    { overlap: true },
  );
  return JSON.parse(JSON.stringify(timelineToPerfetto(tl))) as PerfettoTrace;
}

describe('partial-overlap check', () => {
  test('disjoint, touching and nested slices on one thread pass', () => {
    expect(
      partialOverlaps({ traceEvents: [x('a', 1, 0, 2), x('b', 1, 2, 3), x('c', 1, 3, 1), x('d', 1, 6, 1)] }),
    ).toEqual([]);
  });
  test('slices that cross each other on one thread are reported', () => {
    expect(partialOverlaps({ traceEvents: [x('a', 1, 0, 2), x('b', 1, 1, 3)] })).toEqual([
      { pid: 1, tid: 1, a: 'a', b: 'b' },
    ]);
  });
  test('crossing slices on different threads are fine', () => {
    expect(partialOverlaps({ traceEvents: [x('a', 1, 0, 2), x('b', 2, 1, 3)] })).toEqual([]);
  });
});

describe('Perfetto export', () => {
  test('a t = 4 step parses as JSON with one process per rank named "rank N"', async () => {
    const trace = await exported(4);
    expect(trace.displayTimeUnit).toBe('ms');
    const names = trace.traceEvents
      .filter((e) => e.ph === 'M' && e.name === 'process_name')
      .map((e) => [e.pid, e.args['name']]);
    expect(names).toEqual([
      [1, 'rank 0'],
      [2, 'rank 1'],
      [3, 'rank 2'],
      [4, 'rank 3'],
    ]);
  });

  test('compute, comm and exposed slices sit on their own threads, and none partially overlap', async () => {
    const trace = await exported(4);
    const threads = trace.traceEvents
      .filter((e) => e.ph === 'M' && e.name === 'thread_name' && e.pid === 1)
      .map((e) => e.args['name']);
    expect(threads.sort()).toEqual(['comm', 'compute', 'exposed']);
    expect(partialOverlaps(trace)).toEqual([]);
  });

  test('slices carry µs times and shape, FLOPs, bytes, collective and group size', async () => {
    const trace = await exported(2);
    const gemm = trace.traceEvents.find((e) => e.ph === 'X' && e.name === 'qkv.q')!;
    expect(gemm.args).toMatchObject({
      flops: expect.any(Number),
      M: expect.any(Number),
      shape: expect.stringContaining('·'),
    });
    const coll = trace.traceEvents.find((e) => e.ph === 'X' && e.name === 'attn.reduce' && e.pid === 1)!;
    expect(coll.args).toMatchObject({ collective: 'reduceScatter', groupSize: 2, bytes: expect.any(Number) });
    expect(coll.dur).toBeGreaterThan(1); // modeled PCIe: tens of µs, not ms
  });

  test('a measured trace starts at its earliest event and overlapping slices of one lane go to a second thread', () => {
    const events = [
      slice(0, 'compute', 'a', 1000, 1002),
      slice(0, 'compute', 'b', 1001, 1003),
      slice(0, 'comm', 'allReduce', 1002, 1004),
    ];
    const trace = toPerfetto(events);
    const xs = trace.traceEvents.filter((e) => e.ph === 'X');
    expect(xs.map((e) => [e.name, e.tid, e.ts, e.dur])).toEqual([
      ['a', 1, 0, 2000],
      ['b', 11, 1000, 2000],
      ['allReduce', 2, 2000, 2000],
    ]);
    expect(partialOverlaps(trace)).toEqual([]);
  });

  test('touching slices stay touching after the conversion to µs', () => {
    const events = [slice(0, 'compute', 'a', 0.1, 0.30000000000000004), slice(0, 'compute', 'b', 0.3, 0.7)];
    const xs = toPerfetto(events, [], 0).traceEvents.filter((e) => e.ph === 'X');
    expect(xs.map((e) => e.tid)).toEqual([1, 1]);
  });
});

test('a data-parallel sync exports its bucket beside its collective', () => {
  const e: TraceEvent = {
    ...slice(0, 'comm', 'reduceScatter', 1, 2),
    comm: {
      seq: 3,
      groupSize: 2,
      transport: 'sab-ring',
      dtype: 'f32',
      device: 'gpu',
      sentBytes: 12,
      tensor: 'dp.grads.0',
    },
    dpSync: {
      sync: 'grad-reduce-scatter',
      bucket: 0,
      buckets: 2,
      params: ['wout', 'wdown'],
      numel: 6,
      overlapped: true,
      gradsToCome: 5,
      step: 1,
    },
  };
  const x = toPerfetto([e]).traceEvents.find((t) => t.ph === 'X')!;
  expect(x.args).toMatchObject({
    collective: 'reduceScatter',
    tensor: 'dp.grads.0',
    dpSync: 'grad-reduce-scatter',
    bucket: '1 of 2',
    bucketParams: 'wout, wdown',
    bucketElems: 6,
    overlapped: true,
    optimizerStep: 1,
  });
});

test("a pipeline's p2p message and pass export their ends, stage and micro-batch", () => {
  const send: TraceEvent = {
    ...slice(2, 'comm', 'p2p.send', 1, 2),
    p2p: {
      kind: 'send',
      carries: 'activation',
      from: 2,
      to: 4,
      fromStage: 1,
      toStage: 2,
      virtualStage: 1,
      microBatch: 3,
      tensor: 'act.1.3',
    },
  };
  const pass: TraceEvent = {
    ...slice(2, 'compute', 'pipeline.B', 3, 4),
    pipelinePass: { pass: 'B', stage: 1, chunk: 0, microBatch: 3, liveBytes: 4096 },
  };
  const [a, b] = toPerfetto([send, pass]).traceEvents.filter((t) => t.ph === 'X');
  expect(a!.args).toMatchObject({ p2p: 'send of activation', fromRank: 2, toRank: 4, toStage: 2, microBatch: 3 });
  expect(b!.args).toMatchObject({ pass: 'B', stage: 1, microBatch: 3, liveBytes: 4096 });
});
