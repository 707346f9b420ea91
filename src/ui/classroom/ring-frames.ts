// The ring collectives as a sequence of frames a figure can animate (pure; no DOM).
import { agSendChunk, ringNeighbours, rsSendChunk } from '../../comm/ring-schedule.ts';

import type { RingCollectiveOp } from '../../comm/collectives.ts';

/** One chunk crossing one ring link in a step: `add` sums it into the receiver's, `copy` replaces it. */
export interface RingTransfer {
  readonly from: number;
  readonly to: number;
  readonly chunk: number;
  readonly mode: 'add' | 'copy';
}

/**
 * What each rank holds of each chunk: the ranks whose contribution it sums (sorted), or an empty
 * list for a chunk it does not have (all-gather before the chunk arrives); `kept` false for a chunk
 * a reduce-scatter leaves behind (rank r keeps chunk r only).
 */
export interface ChunkState {
  readonly from: readonly number[];
  readonly kept: boolean;
}

/** One ring step: the transfers (one per rank, to its right neighbour) and every [rank][chunk] after it. */
export interface RingFrame {
  readonly phase: Exclude<RingCollectiveOp, 'allReduce'>;
  readonly transfers: readonly RingTransfer[];
  readonly after: readonly (readonly ChunkState[])[];
}

/** A collective's ring: the state before the first step and one frame per step. */
export interface RingPlay {
  readonly op: RingCollectiveOp;
  readonly t: number;
  readonly start: readonly (readonly ChunkState[])[];
  readonly frames: readonly RingFrame[];
}

const union = (a: readonly number[], b: readonly number[]): number[] =>
  [...new Set([...a, ...b])].sort((x, y) => x - y);

/**
 * The ring steps of `op` over t ranks, chunk c = the c-th of t near-equal pieces of the tensor, as
 * the transports run them (src/comm/ring-schedule.ts): reduce-scatter, t−1 steps, rank r sends
 * chunk (r−k−1) mod t to r+1, which adds it to its own, leaving rank r the full sum of chunk r;
 * all-gather, t−1 steps, rank r forwards chunk (r−k) mod t; all-reduce = reduce-scatter then
 * all-gather, 2(t−1) steps. t = 1 has no steps.
 */
export function ringPlay(op: RingCollectiveOp, t: number): RingPlay {
  const ranks = [...Array(t).keys()];
  let state: ChunkState[][] = ranks.map((r) =>
    ranks.map((c) => ({ from: op === 'allGather' ? (c === r ? [r] : []) : [r], kept: true })),
  );
  const start = state;
  const frames: RingFrame[] = [];
  const step = (phase: RingFrame['phase'], k: number): void => {
    const transfers = ranks.map((r) => ({
      from: r,
      to: ringNeighbours(r, t).next,
      chunk: phase === 'reduceScatter' ? rsSendChunk(r, k, t) : agSendChunk(r, k, t),
      mode: phase === 'reduceScatter' ? ('add' as const) : ('copy' as const),
    }));
    const next = state.map((row) => row.slice());
    for (const x of transfers) {
      const sent = state[x.from][x.chunk].from;
      const mine = state[x.to][x.chunk].from;
      next[x.to][x.chunk] = { from: x.mode === 'add' ? union(mine, sent) : [...sent], kept: true };
    }
    state = next;
    frames.push({ phase, transfers, after: state });
  };
  if (t > 1) {
    if (op !== 'allGather') for (let k = 0; k < t - 1; k++) step('reduceScatter', k);
    if (op === 'reduceScatter') {
      const last = frames[frames.length - 1];
      const kept = last.after.map((row, r) => row.map((s, c) => ({ ...s, kept: c === r })));
      frames[frames.length - 1] = { ...last, after: kept };
    }
    if (op !== 'reduceScatter') for (let k = 0; k < t - 1; k++) step('allGather', k);
  }
  return { op, t, start, frames };
}
