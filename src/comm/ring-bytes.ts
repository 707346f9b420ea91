import type { CollectiveOp } from './collectives.ts';

/**
 * nccl-tests bus factor: all-reduce 2(t−1)/t, reduce-scatter and all-gather (t−1)/t, broadcast 1,
 * barrier 0; a ring exchange 1 (each rank sends its whole tensor over one link, as a send/recv pair);
 * all-to-all (t−1)/t (nccl-tests doc/PERFORMANCE.md: each rank sends all but its own 1/t of S).
 */
export function busFactor(op: CollectiveOp, t: number): number {
  switch (op) {
    case 'allReduce':
      return (2 * (t - 1)) / t;
    case 'reduceScatter':
    case 'allGather':
    case 'allToAll':
      return (t - 1) / t;
    case 'broadcast':
    case 'ringExchange':
      return 1;
    case 'barrier':
      return 0;
  }
}

/**
 * Bytes each rank sends on a ring for one collective of payload S (float32 or not):
 * all-reduce 2(t−1)/t·S, reduce-scatter and all-gather (t−1)/t·S, broadcast S (pipelined chain),
 * barrier 0, ring exchange S (one hop), an even all-to-all (t−1)/t·S (to the other ranks, not
 * on a ring) — i.e. busFactor(op, t)·S; 0 at t = 1.
 */
export function ringBytesSent(op: CollectiveOp, payloadBytes: number, t: number): number {
  return t <= 1 ? 0 : busFactor(op, t) * payloadBytes;
}
