// What the MoE view draws of a run: owners of each expert (with EDP > 1 two ranks hold it), the
// all-to-all matrix from the trace's bytes per peer, the straggler against the mean (from the run and from the events).
import { describe, expect, test } from 'vitest';
import type { TraceEvent } from '../../../../src/core/trace-event.ts';
import type { MoeRun } from '../../../../src/session/moe-run.ts';
import {
  allToAllBytes,
  expertStraggler,
  expertStragglerSentence,
  moeHeat,
  moeStragglerText,
} from '../../../../src/ui/timeline/moe-view-model.ts';

const coords = { tp: 0, cp: 0, dp: 0, pp: 0, etp: 0, ep: 0, edp: 0 };

/** 4 ranks, EP 2 × EDP 2, E = 4: ranks 0 and 2 hold experts 0–1, ranks 1 and 3 experts 2–3. */
const run = {
  layout: { tp: 1, sp: false, ep: 2, etp: 1, dispatcher: 'alltoall' },
  ranks: [0, 1, 2, 3].map((rank) => ({
    rank,
    coords: { ...coords, ep: rank % 2, edp: rank >> 1 },
    tokensPerExpert: [
      [3, 1, 0, 0],
      [1, 1, 1, 1],
      [2, 2, 0, 0],
      [0, 0, 2, 2],
    ][rank]!,
    dropped: rank === 0 ? 2 : 0,
    firstExpert: (rank % 2) * 2,
    expertRows: [
      [4, 2],
      [1, 1],
      [3, 3],
      [2, 2],
    ][rank]!,
  })),
  expertLoad: [6, 4, 3, 3],
  dropped: 2,
  aux: 0,
  z: 0,
  straggler: { rank: 2, rows: 6 },
} as unknown as MoeRun; // the oracle and trace are not read by these functions

const a2a = (rank: number, tensor: string, sent: number[], t0: number): TraceEvent => ({
  rank,
  stream: 'comm',
  op: 'allToAll',
  shape: [],
  bytes: 0,
  t0,
  t1: t0 + 1,
  phases: [],
  comm: {
    seq: 1,
    groupSize: 2,
    transport: 'sab-ring',
    dtype: 'float32',
    device: 'cpu',
    sentBytes: 0,
    tensor,
    peers: { ranks: rank % 2 ? [rank - 1, rank] : [rank, rank + 1], sentBytes: sent, receivedBytes: sent },
  },
});

describe('the MoE view model', () => {
  test('each expert is held by its EP rank in every EDP replica; the colour scale tops at the largest cell', () => {
    const h = moeHeat(run);
    expect(h.owners).toEqual([
      [0, 2],
      [0, 2],
      [1, 3],
      [1, 3],
    ]);
    expect(h.max).toBe(3);
    expect(h.tokens[3]).toEqual([0, 0, 2, 2]);
  });

  test('the straggler: the rank whose experts processed the most rows, against the mean over ranks', () => {
    // rows per rank 6, 2, 6, 4: mean 4.5; rank 2 (experts 0–1) processed 6.
    expect(moeStragglerText(run)).toBe(
      'rank 2: its experts 0–1 processed 6 token rows (1.33× the mean of 4.5); the others wait for it in the combine all-to-all',
    );
  });

  test('the dispatch matrix sums each rank’s bytes per peer, in global ranks, and ignores other tensors', () => {
    const trace = [
      a2a(0, 'moe.dispatch', [64, 32], 0),
      a2a(1, 'moe.dispatch', [16, 48], 0),
      a2a(2, 'moe.dispatch', [8, 8], 0),
      a2a(3, 'moe.dispatch', [0, 128], 0),
      a2a(0, 'moe.combine', [999, 999], 2),
      a2a(0, 'moe.dispatch.counts', [999, 999], 0),
    ];
    expect(allToAllBytes(trace, 'moe.dispatch', 4)).toEqual([
      [64, 32, 0, 0],
      [16, 48, 0, 0],
      [0, 0, 8, 8],
      [0, 0, 0, 128],
    ]);
  });

  test('the expert straggler of a timeline: the rank whose expert GEMMs ran the most rows, against the mean', () => {
    const gemm = (rank: number, firstExpert: number, tokens: number[]): Pick<TraceEvent, 'rank' | 'experts'> => ({
      rank,
      experts: { firstExpert, tokens },
    });
    // forward and backward carry the same rows; rank 1's 5 + 4 = 9 against the mean (3 + 9 + 6) / 3 = 6
    const events = [gemm(0, 0, [2, 1]), gemm(1, 2, [5, 4]), gemm(2, 4, [6, 0]), gemm(1, 2, [5, 4]), { rank: 3 }];
    const s = expertStraggler(events)!;
    expect([s.rank, s.rows, s.meanRows]).toEqual([1, 9, 6]);
    expect(expertStragglerSentence(s)).toBe(
      'Expert straggler: rank 1 — its experts 2–3 processed 9 token rows (1.50× the mean of 6.0): the most work before the combine all-to-all, which no rank of its group can finish before it.',
    );
    expect(expertStraggler([{ rank: 0 }, { rank: 1 }])).toBeNull();
  });
});
