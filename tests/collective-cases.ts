// The collective cases every rank-worker pool is checked on, in the page (tests/gpu/ranks) and as
// Node threads (tests/unit/comm/node-ranks.test.ts).
import type { CollectiveArgs } from '../src/ranks/comm-programs.ts';

/** One collective call of the cases: everything but the data and where it lives. */
export type CollectiveCase = Omit<CollectiveArgs, 'data' | 'device'>;

/**
 * Cases for t ranks: all-reduce on sizes divisible by t and not; the rest along several dims; and
 * two large enough (pieces ≥ 16 Ki elements) that GPU results are uploaded straight from the slots;
 * a ring exchange (rank r gets rank r − 1's tensor), small and large.
 */
export function collectiveCases(t: number): CollectiveCase[] {
  return [
    { op: 'allReduce', shape: [1 << 17], reduceOp: 'sum' },
    { op: 'allGather', shape: [1 << 15], dim: 0 },
    { op: 'allReduce', shape: [4 * t, 3], reduceOp: 'sum' },
    { op: 'allReduce', shape: [7, 5], reduceOp: 'sum' },
    { op: 'allReduce', shape: [2 * t + 1], reduceOp: 'max' },
    { op: 'reduceScatter', shape: [2 * t, 3], dim: 0, reduceOp: 'sum' },
    { op: 'reduceScatter', shape: [3, 2 * t], dim: 1, reduceOp: 'max' },
    { op: 'allGather', shape: [3, 5], dim: 0 },
    { op: 'allGather', shape: [2, 3, 5], dim: 2 },
    { op: 'broadcast', shape: [5, 3], root: t - 1 },
    { op: 'ringExchange', shape: [3, 5] },
    { op: 'ringExchange', shape: [1 << 15] },
  ];
}

/** Ring sums of t values in [−1, 1] differ from the float64 reference by ≤ t²·2⁻²⁴; we allow 1e-6·t². */
export const collectiveTolerance = (t: number): number => 1e-6 * t * t;

/** The largest |a[i] − b[i]| (Infinity when the lengths differ). */
export function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let worst = a.length === b.length ? 0 : Infinity;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}
