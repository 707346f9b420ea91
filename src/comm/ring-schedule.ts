import { numel } from '../core/shape.ts';
import { allToAllSentBytes } from './all-to-all.ts';
import type { CollectiveCall } from './call.ts';
import { chunkBounds } from './layout.ts';

const mod = (a: number, t: number): number => ((a % t) + t) % t;

/**
 * Ring reduce-scatter, step k ∈ [0, t−1): rank r receives chunk (r−k−2) mod t from rank r−1 and
 * adds its own; after t−1 steps rank r holds the full reduction of chunk r.
 */
export function rsRecvChunk(r: number, k: number, t: number): number {
  return mod(r - k - 2, t);
}

/** The chunk rank r sends to rank r+1 at reduce-scatter step k (= what r+1 receives). */
export function rsSendChunk(r: number, k: number, t: number): number {
  return mod(r - k - 1, t);
}

/** Ring all-gather, step k ∈ [0, t−1): rank r receives chunk (r−k−1) mod t from rank r−1. */
export function agRecvChunk(r: number, k: number, t: number): number {
  return mod(r - k - 1, t);
}

/** The chunk rank r sends to rank r+1 at all-gather step k. */
export function agSendChunk(r: number, k: number, t: number): number {
  return mod(r - k, t);
}

/** Next and previous rank on the ring. */
export function ringNeighbours(r: number, t: number): { next: number; prev: number } {
  return { next: mod(r + 1, t), prev: mod(r - 1, t) };
}

/**
 * Bytes rank r sends on the ring for `call` (float32): all-reduce ≈ 2(t−1)/t·S, reduce-scatter
 * and all-gather (t−1)/t·S, broadcast S along the chain root → root+1 → … (the last sends 0), a
 * ring exchange S to rank r + 1; an all-to-all (no ring) the rows it sends to other ranks.
 */
export function ringSentBytes(call: CollectiveCall, t: number, r: number): number {
  const n = numel(call.shape);
  const size = (c: number): number => {
    const [lo, hi] = chunkBounds(n, t, c);
    return hi - lo;
  };
  let elems = 0;
  switch (call.op) {
    case 'allReduce':
      for (let k = 0; k < t - 1; k++) elems += size(rsSendChunk(r, k, t)) + size(agSendChunk(r, k, t));
      break;
    case 'reduceScatter':
      elems = ((t - 1) * n) / t;
      break;
    case 'allGather':
      elems = (t - 1) * n;
      break;
    case 'broadcast':
      elems = t > 1 && mod(r + 1, t) !== call.root ? n : 0;
      break;
    case 'ringExchange':
      elems = t > 1 ? n : 0;
      break;
    case 'barrier':
      break;
    case 'allToAll':
      return allToAllSentBytes(call, r);
  }
  return elems * 4;
}
