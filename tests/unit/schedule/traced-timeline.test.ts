// The ranks' trace as a timeline: shifted to its first start, exposed = comm minus the rank's compute,
// totals and the last rank, the all-to-alls paired by group and sequence number for the waits; and the
// words the timeline puts on an all-to-all (bytes per peer) and an expert GEMM (rows per expert).
import { describe, expect, test } from 'vitest';
import type { TraceEvent } from '../../../src/core/trace-event.ts';
import { tracedStragglers, tracedTimeline } from '../../../src/schedule/traced-timeline.ts';
import { tracedLabels, tracedTooltip } from '../../../src/ui/shared/traced-format.ts';

/** Rank `rank`'s all-to-all over ranks [0, 1] (call `seq`), [t0, t1] ms, sending `sent` bytes to each. */
const a2a = (rank: number, seq: number, t0: number, t1: number, sent: number[]): TraceEvent => ({
  rank,
  stream: 'comm',
  op: 'allToAll',
  shape: [],
  bytes: 0,
  t0,
  t1,
  phases: [],
  comm: {
    seq,
    groupSize: 2,
    transport: 'sab-ring',
    dtype: 'float32',
    device: 'cpu',
    sentBytes: sent.reduce((a, b) => a + b, 0),
    tensor: 'moe.dispatch',
    peers: { ranks: [0, 1], sentBytes: sent, receivedBytes: [...sent].reverse() },
  },
});
const gemm = (rank: number, t0: number, t1: number, tokens: number[]): TraceEvent => ({
  rank,
  stream: 'compute',
  op: 'moe.experts',
  shape: [],
  bytes: 0,
  t0,
  t1,
  phases: [],
  flops: 1e6,
  experts: { firstExpert: 2 * rank, tokens },
});

// rank 0: all-to-all [100, 104), GEMM [103, 106); rank 1 enters the all-to-all at 102 and runs its GEMM [104, 110)
const trace = [
  a2a(0, 1, 100, 104, [64, 2048]),
  gemm(0, 103, 106, [3, 1]),
  a2a(1, 1, 102, 104, [512, 64]),
  gemm(1, 104, 110, [5, 7]),
];

describe('the traced timeline', () => {
  test('starts at the first event; exposed is the part of a collective its rank computes nothing under', () => {
    const tl = tracedTimeline(trace);
    expect(tl.rankIds).toEqual([0, 1]);
    expect(tl.events.map((e) => [e.rank, e.t0, e.t1])).toEqual([
      [0, 0, 4],
      [0, 3, 6],
      [1, 2, 4],
      [1, 4, 10],
    ]);
    expect(tl.events[0]!.exposed).toEqual([{ t0: 0, t1: 3 }]);
    expect(tl.events[0]!.exposedMs).toBe(3);
    expect(tl.events[2]!.exposedMs).toBe(2);
    expect(tl.totals.map((t) => [t.rank, t.computeMs, t.commMs, t.exposedMs, t.endMs])).toEqual([
      [0, 3, 4, 3, 6],
      [1, 6, 2, 2, 10],
    ]);
    expect([tl.stepMs, tl.slowestRank]).toEqual([10, 1]);
  });

  test('an all-to-all call is its group and sequence number: rank 0 waited 2 ms for rank 1', () => {
    const a = tracedStragglers(tracedTimeline(trace));
    expect(a.calls).toHaveLength(1);
    expect(a.calls[0]!.result.straggler).toBe(1);
    expect(a.calls[0]!.result.waits).toEqual([{ rank: 0, t0: 0, t1: 2 }]);
    // a call one rank's trace lacks is not paired
    expect(tracedStragglers(tracedTimeline([trace[0]!, trace[1]!])).calls).toHaveLength(0);
  });

  test('an all-to-all is labelled with the bytes it sent each other rank, an expert GEMM with its rows', () => {
    const tl = tracedTimeline(trace);
    const [a, g] = tl.events;
    expect(tracedLabels(a!)[0]).toEqual(['moe.dispatch →1 2 KiB']);
    expect(tracedTooltip(a!)).toContain('rank 0: sent 64 B, received 2 KiB (own rows, kept locally)');
    expect(tracedTooltip(a!)).toContain('rank 1: sent 2 KiB, received 64 B');
    expect(tracedLabels(g!)[0]).toEqual(['experts 0–1 rows 3·1']);
    expect(tracedTooltip(g!)[1]).toBe('grouped GEMM of experts 0–1: 4 token rows (3, 1 per expert)');
  });
});
