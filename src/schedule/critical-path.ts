import type { EventRef, ScheduledEvent, Timeline } from './schedule.ts';

/** One link of the critical path on `rank`, ms from the step's start. */
export interface PathSegment {
  readonly rank: number;
  readonly opIndex: number;
  readonly op: string;
  /** compute: the op's run; comm: a collective's transfer [last arrival, end). */
  readonly kind: 'compute' | 'comm';
  readonly t0: number;
  readonly t1: number;
}

/** A rank on the path idling inside a collective for a slower rank, ms. Not part of the chain. */
export interface PathWait {
  readonly rank: number;
  readonly opIndex: number;
  readonly op: string;
  readonly t0: number;
  readonly t1: number;
  /** The rank that arrived last; the chain continues on it. */
  readonly slowRank: number;
}

/** The chain that sets the step time; segments tile [0, stepMs) in time order. */
export interface CriticalPath {
  readonly stepMs: number;
  /** The rank whose last event ends at stepMs (the lowest on ties). */
  readonly endRank: number;
  readonly segments: readonly PathSegment[];
  readonly waits: readonly PathWait[];
  /** Σ compute segments and Σ comm segments, ms (they add up to stepMs). */
  readonly computeMs: number;
  readonly commMs: number;
}

/**
 * The critical path of a scheduled step, walked backward from the slowest rank's last event.
 * Every event starts when its binding dependency (`after`, set by scheduleStep; ties go to the
 * most recent op in program order) ends, so the walk is:
 * - a compute op: the segment [t0, t1) on its rank, then its `after`;
 * - a collective on rank r: the segment [start, end) (start = the last rank's arrival). If r itself
 *   arrived last (no wait; ties stay on r), then r's arrival dependency; otherwise r waited
 *   [arrival_r, start) for the slow rank (listed in `waits`) and the path moves to the slow rank's
 *   arrival dependency.
 * It ends at an event with no dependency (which starts at 0).
 */
export function criticalPath(tl: Timeline): CriticalPath {
  const byRef = new Map<string, ScheduledEvent>();
  const key = (r: EventRef): string => `${r.rank}:${r.opIndex}`;
  for (const e of tl.events) byRef.set(key(e), e);
  const lastOn = tl.events.filter((e) => e.rank === tl.slowestRank && e.t1 === tl.stepMs);
  let cur: ScheduledEvent | undefined = lastOn.sort((a, b) => b.opIndex - a.opIndex)[0];
  const segments: PathSegment[] = [];
  const waits: PathWait[] = [];
  while (cur) {
    const e: ScheduledEvent = cur;
    const at = { opIndex: e.opIndex, op: e.op };
    if (e.stream === 'compute') {
      segments.push({ rank: e.rank, ...at, kind: 'compute', t0: e.t0, t1: e.t1 });
      cur = e.after ? byRef.get(key(e.after)) : undefined;
      continue;
    }
    const start = e.t0 + e.waitMs;
    segments.push({ rank: e.rank, ...at, kind: 'comm', t0: start, t1: e.t1 });
    const slow = e.waitMs > 0 && e.lastArrival !== undefined ? e.lastArrival : e.rank;
    if (slow !== e.rank) waits.push({ rank: e.rank, ...at, t0: e.t0, t1: start, slowRank: slow });
    const arrivedLast = byRef.get(key({ rank: slow, opIndex: e.opIndex }));
    cur = arrivedLast?.after ? byRef.get(key(arrivedLast.after)) : undefined;
  }
  segments.reverse();
  waits.reverse();
  const sum = (k: PathSegment['kind']): number =>
    segments.filter((s) => s.kind === k).reduce((a, s) => a + (s.t1 - s.t0), 0);
  return {
    stepMs: tl.stepMs,
    endRank: tl.slowestRank,
    segments,
    waits,
    computeMs: sum('compute'),
    commMs: sum('comm'),
  };
}
