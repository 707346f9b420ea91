// What the ranks recorded as a timeline (pure): their trace events on lanes, exposed communication,
// and who waited for whom inside the all-to-alls. The MoE block's trace (session/moe-run.ts) draws
// this way: its expert GEMMs and all-to-alls are events the ranks timed, not ops of a plan.
import type { TraceEvent } from '../core/trace-event.ts';
import { exposedComm, exposedParts } from './exposed.ts';
import type { Interval } from './intervals.ts';
import type { RankTotals } from './schedule.ts';
import { analyseStragglers, type StragglerAnalysis } from './stragglers.ts';

/** A recorded event, ms from the trace's first start, with the part of a collective no compute of its rank covers. */
export type TracedEvent = TraceEvent & {
  /** Collectives: [t0, t1) minus the rank's compute intervals, ms; [] for compute. */
  readonly exposed: readonly Interval[];
  readonly exposedMs: number;
};

/** Per-rank totals of a traced window, ms (exposed = |union(comm) − union(compute)|); no idle (the ranks' window has no step to fill). */
export type TracedTotals = Omit<RankTotals, 'idleMs'>;

/** The ranks' trace as the timeline draws it: no passes (a trace event carries none), lanes in rank order. */
export interface TracedTimeline {
  readonly traced: true;
  readonly rankIds: readonly number[];
  readonly ranks: number;
  readonly events: readonly TracedEvent[];
  readonly totals: readonly TracedTotals[];
  /** The last end over the ranks, ms from the first start. */
  readonly stepMs: number;
  /** The rank whose events end last (the lowest on ties). */
  readonly slowestRank: number;
}

/** The timeline of `trace` (every rank's events, on the shared clock), shifted so its first event starts at 0. */
export function tracedTimeline(trace: readonly TraceEvent[]): TracedTimeline {
  const origin = trace.reduce((m, e) => Math.min(m, e.t0), Infinity);
  const shifted = trace.map((e) => ({ ...e, t0: e.t0 - origin, t1: e.t1 - origin }));
  const exposure = exposedComm(shifted);
  const computeOf = new Map(
    exposure.map((x) => [x.rank, shifted.filter((e) => e.rank === x.rank && e.stream === 'compute')]),
  );
  const events: TracedEvent[] = shifted
    .map((e) => {
      const parts = e.stream === 'comm' ? exposedParts(e, computeOf.get(e.rank) ?? []) : [];
      return { ...e, exposed: parts, exposedMs: parts.reduce((a, p) => a + (p.t1 - p.t0), 0) };
    })
    .sort((a, b) => a.rank - b.rank || a.t0 - b.t0);
  const totals = exposure.map((x) => ({
    rank: x.rank,
    computeMs: x.computeMs,
    commMs: x.commMs,
    exposedMs: x.exposedMs,
    endMs: Math.max(0, ...events.filter((e) => e.rank === x.rank).map((e) => e.t1)),
  }));
  const stepMs = Math.max(0, ...totals.map((t) => t.endMs));
  const rankIds = totals.map((t) => t.rank);
  return {
    traced: true,
    rankIds,
    ranks: rankIds.length,
    events,
    totals,
    stepMs,
    slowestRank: totals.find((t) => t.endMs === stepMs)?.rank ?? 0,
  };
}

/** Which all-to-all a call is: its group (global ranks), its per-communicator sequence number and tensor. */
export interface TracedCallKey {
  readonly ranks: readonly number[];
  readonly seq: number;
  readonly tensor: string;
}

/**
 * Who waited for whom in the traced all-to-alls: every rank's event of one call (same group, same
 * `comm.seq`, which each communicator counts, and same tensor) is an entry [arrival, end). Only
 * calls whose group the event names (an all-to-all's `peers`) are paired: a trace event of another
 * collective does not say which of a rank's groups it ran on.
 */
export function tracedStragglers(tl: TracedTimeline): StragglerAnalysis<TracedCallKey> {
  const by = new Map<string, { key: TracedCallKey; entries: { rank: number; t0: number; t1: number }[] }>();
  for (const e of tl.events) {
    const peers = e.comm?.peers;
    if (!peers) continue;
    const key = { ranks: peers.ranks, seq: e.comm!.seq, tensor: e.comm!.tensor ?? e.op };
    const id = JSON.stringify(key);
    let c = by.get(id);
    if (!c) by.set(id, (c = { key, entries: [] }));
    c.entries.push({ rank: e.rank, t0: e.t0, t1: e.t1 });
  }
  const calls = [...by.values()].filter((c) => c.entries.length === c.key.ranks.length);
  calls.sort((a, b) => Math.min(...a.entries.map((x) => x.t0)) - Math.min(...b.entries.map((x) => x.t0)));
  return analyseStragglers(calls);
}
