import { describe, expect, it } from 'vitest';
import { simulatePipeline } from '../../../../src/projection/pipeline/pipeline-schedule.ts';

describe('pipeline sends that hold the sender', () => {
  // p 2, m 2, 1F1B; forward 1 ms, backward 2 ms, p2p 0.5 ms.
  const input = { p: 2, v: 1, m: 2, forwardMs: () => 1, backwardMs: () => 2, p2pMs: 0.5 };

  it('as a delay on the edge only: stage 1 runs F0 [1.5, 2.5], B0 [2.5, 4.5], F1 [4.5, 5.5], B1 [5.5, 7.5]; stage 0 ends with B1 [8, 10]', () => {
    const run = simulatePipeline(input);
    expect(run.ops[1]!.map((o) => [o.t0, o.t1])).toEqual([
      [1.5, 2.5],
      [2.5, 4.5],
      [4.5, 5.5],
      [5.5, 7.5],
    ]);
    expect(run.spanMs).toBe(10);
  });

  it('blocking (1F1B): each op that sends holds its stage 0.5 ms more, so stage 1 runs F1 [5, 6] after B0 sends, and the step ends at 10.5', () => {
    const run = simulatePipeline({ ...input, senderBusyMs: 0.5 });
    // Stage 0: F0 [0, 1] sends until 1.5, F1 [1.5, 2.5] sends until 3; B0 waits for stage 1's B0 (4.5) + 0.5.
    expect(run.ops[0]!.map((o) => [o.t0, o.t1])).toEqual([
      [0, 1],
      [1.5, 2.5],
      [5, 7],
      [8.5, 10.5],
    ]);
    expect(run.ops[1]!.map((o) => [o.t0, o.t1])).toEqual([
      [1.5, 2.5],
      [2.5, 4.5],
      [5, 6],
      [6, 8],
    ]);
    expect(run.spanMs).toBe(10.5);
  });
});

describe('a wait before a stage’s first op (the parameter gather of its first forward pre-hook)', () => {
  const input = { p: 2, v: 1, m: 2, forwardMs: () => 1, backwardMs: () => 2, p2pMs: 0.5 };

  it('delays the stage and, through its sends, the stages after it: waits 0.25 and 1 add 1.25 ms to the span', () => {
    const run = simulatePipeline({ ...input, startDelayMs: (i) => [0.25, 1][i]! });
    // Stage 0: F0 [0.25, 1.25]; stage 1's F0 ready at 1.75, waits 1: [2.75, 3.75]; everything after moves by 1.25.
    expect(run.ops[0]![0]).toMatchObject({ t0: 0.25, t1: 1.25 });
    expect(run.ops[1]!.map((o) => [o.t0, o.t1])).toEqual([
      [2.75, 3.75],
      [3.75, 5.75],
      [5.75, 6.75],
      [6.75, 8.75],
    ]);
    expect(run.spanMs).toBe(10 + 1.25);
  });
});

describe('a gather dispatched at the step’s start (core_r0.8’s zero_grad): a ready time, not a wait', () => {
  const input = { p: 2, v: 1, m: 2, forwardMs: () => 1, backwardMs: () => 2, p2pMs: 0.5 };

  it('hides in stage 1’s warm-up: ready at 1 ms ≤ its input at 1.5 ms moves nothing; ready at 2 moves its F0 to [2, 3]', () => {
    const hidden = simulatePipeline({ ...input, startReadyMs: (i) => [0, 1][i]! });
    expect(hidden.spanMs).toBe(10);
    const late = simulatePipeline({ ...input, startReadyMs: (i) => [0, 2][i]! });
    expect(late.ops[1]![0]).toMatchObject({ t0: 2, t1: 3 });
    // Everything after stage 1's F0 moves by 0.5: span 10.5.
    expect(late.spanMs).toBe(10.5);
  });

  it('with a wait after it, the wait adds past the ready time: ready 1, wait 0.25 on stage 1 gives F0 [1.75, 2.75]', () => {
    const run = simulatePipeline({ ...input, startReadyMs: (i) => [0, 1][i]!, startDelayMs: (i) => [0, 0.25][i]! });
    expect(run.ops[1]![0]).toMatchObject({ t0: 1.75, t1: 2.75 });
  });
});
