import { describe, expect, test } from 'vitest';
import { collectiveTimeUs, interconnectPresets } from '../../../src/hardware/interconnect.ts';
import { measuredCommMs, modeledCommMs } from '../../../src/schedule/durations.ts';
import type { TraceEvent } from '../../../src/core/trace-event.ts';
import { tinyPlan } from './tiny-plan.ts';

const call = (rank: number, seq: number, op: string, t0: number, t1: number): TraceEvent => ({
  rank,
  stream: 'comm',
  op,
  shape: [4],
  bytes: 16,
  t0,
  t1,
  phases: [],
  comm: { seq, groupSize: 2, transport: 'sab', dtype: 'float32', device: 'gpu', sentBytes: 8 },
});

describe('collective durations', () => {
  test('modeled times are the ring model’s µs in ms at each collective and 0 elsewhere', () => {
    const plan = tinyPlan(4, ['a.gemm', 'x.reduce']);
    const link = interconnectPresets['nvlink-a100'];
    const ms = collectiveTimeUs('allReduce', 1 << 20, 4, link) / 1000;
    expect(modeledCommMs(plan, link)).toEqual([
      [0, ms],
      [0, ms],
      [0, ms],
      [0, ms],
    ]);
  });

  test('a measured transfer runs from the last arrival to the last departure', () => {
    const plan = tinyPlan(2, ['a.gemm', 'x.reduce', 'y.reduce']);
    const events = [
      call(0, 2, 'allReduce', 20, 21),
      call(0, 1, 'allReduce', 10, 15),
      call(1, 1, 'allReduce', 12, 15.5),
      call(1, 2, 'allReduce', 20.5, 21),
    ];
    expect(measuredCommMs(plan, events)).toEqual([
      [0, 3.5, 0.5],
      [0, 3.5, 0.5],
    ]);
  });

  test('measured events that do not match the plan’s collectives are refused', () => {
    const plan = tinyPlan(2, ['x.reduce']);
    expect(() => measuredCommMs(plan, [call(0, 1, 'allReduce', 0, 1)])).toThrow(/rank 1 has 0 comm events/);
    expect(() => measuredCommMs(plan, [call(0, 1, 'allGather', 0, 1), call(1, 1, 'allGather', 0, 1)])).toThrow(
      /is allGather, the plan's collective 0 \(x.reduce\) is allReduce/,
    );
  });
});
