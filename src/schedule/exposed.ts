import type { TraceStream } from '../core/trace-event.ts';
import { subtractIntervals, totalLength, unionIntervals, type Interval } from './intervals.ts';

/** The part of an event the overlap analysis needs: a rank, a lane and [t0, t1) in ms. */
export interface TimedSlice {
  readonly rank: number;
  readonly stream: TraceStream;
  readonly t0: number;
  readonly t1: number;
}

/**
 * One rank's communication and how much of it compute hides. Definition (PyTorch profiler,
 * DESIGN.md): exposed = |union(comm) − union(compute)|; all values in ms.
 */
export interface RankExposure {
  readonly rank: number;
  /** |union(compute intervals)|, ms. */
  readonly computeMs: number;
  /** |union(comm intervals)|, ms (a collective's time includes waiting for the group). */
  readonly commMs: number;
  /** |union(comm) − union(compute)|, ms. */
  readonly exposedMs: number;
  /** union(comm) − union(compute): where communication is not hidden, ms on the event clock. */
  readonly exposed: readonly Interval[];
}

/** Exposed communication per rank (ranks in increasing order, those that have events). Works on real traces and schedules alike. */
export function exposedComm(events: readonly TimedSlice[]): RankExposure[] {
  const ranks = [...new Set(events.map((e) => e.rank))].sort((a, b) => a - b);
  return ranks.map((rank) => {
    const mine = events.filter((e) => e.rank === rank);
    const compute = unionIntervals(mine.filter((e) => e.stream === 'compute'));
    const comm = unionIntervals(mine.filter((e) => e.stream === 'comm'));
    const exposed = subtractIntervals(comm, compute);
    return {
      rank,
      computeMs: totalLength(compute),
      commMs: totalLength(comm),
      exposedMs: totalLength(exposed),
      exposed,
    };
  });
}

/** The exposed parts of one comm interval given its rank's compute intervals (ms). */
export function exposedParts(comm: Interval, compute: readonly Interval[]): Interval[] {
  return subtractIntervals([comm], compute);
}
