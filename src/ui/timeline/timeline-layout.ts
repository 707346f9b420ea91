// Geometry and selection of the timeline (pure, no DOM): lanes, the shown pass, totals, culling, label fit.
import type { BlockKind } from '../../schedule/blocks.ts';
import type { MeasuredEvent, MeasuredTimeline } from '../../kineto/measured-timeline.ts';
import { passOf, type OpPhase, type StepPass } from '../../parallel/plan-types.ts';
import type { ScheduledEvent, Timeline } from '../../schedule/schedule.ts';
import { slowedPart, type TransferEvent } from '../../schedule/transfer-slowdown.ts';
import type { TracedEvent, TracedTimeline } from '../../schedule/traced-timeline.ts';

/** What the timeline draws: a scheduled step of the playground, a window of a measured (Kineto) job, or the ranks' own trace. */
export type ChartTimeline = Timeline | MeasuredTimeline | TracedTimeline;
/** An event of any of them. */
export type ChartEvent = ScheduledEvent | MeasuredEvent | TracedEvent;

/** True for a scheduled step (its events have passes); a measured or traced window has none. */
export const isScheduled = (tl: ChartTimeline): tl is Timeline => !('measured' in tl) && !('traced' in tl);

/** The pass an event is shown in (the finalize reductions with backward); a measured kernel, or a recorded one its rank did not mark, has none. */
export function eventPass(e: ChartEvent): StepPass | undefined {
  const phase = 'phase' in e ? e.phase : undefined;
  return phase === undefined ? undefined : passOf(phase);
}

/** The rank of every lane pair, in order: 0…t−1 for a scheduled step, the loaded ranks for a measured job. */
export function rankIdsOf(tl: ChartTimeline): readonly number[] {
  return isScheduled(tl) ? Array.from({ length: tl.ranks }, (_, r) => r) : tl.rankIds;
}

/** Which pass the timeline shows. */
export type PhaseView = 'forward' | 'backward' | 'both';

/** Every lane is compute or communication. */
export type LaneKind = 'compute' | 'comm';

/** One lane's vertical place, px from the plot's top. */
export interface Lane {
  readonly rank: number;
  readonly kind: LaneKind;
  readonly y: number;
  readonly height: number;
}

/** Vertical sizes of the lanes, px. */
export interface LaneSizes {
  readonly compute: number;
  readonly comm: number;
  /** Space between the two lanes of a rank. */
  readonly innerGap: number;
  /** Space between ranks. */
  readonly rankGap: number;
}

/** Default lane sizes: a compute block holds two 13 px lines (name over shape) on a projector. */
export const defaultLaneSizes: LaneSizes = { compute: 40, comm: 26, innerGap: 3, rankGap: 14 };

/** Lanes of `ranks` ranks (a count, or the rank ids) in order rank 0 compute, rank 0 comm, rank 1 compute, …; and their total height, px. */
export function laneLayout(
  ranks: number | readonly number[],
  sizes: LaneSizes = defaultLaneSizes,
): { lanes: Lane[]; height: number } {
  const lanes: Lane[] = [];
  const ids = typeof ranks === 'number' ? Array.from({ length: ranks }, (_, r) => r) : ranks;
  let y = 0;
  for (const [i, rank] of ids.entries()) {
    if (i > 0) y += sizes.rankGap;
    lanes.push({ rank, kind: 'compute', y, height: sizes.compute });
    y += sizes.compute + sizes.innerGap;
    lanes.push({ rank, kind: 'comm', y, height: sizes.comm });
    y += sizes.comm;
  }
  return { lanes, height: y };
}

/** A drawable block: an event as compute or comm, or an exposed part of a collective; ms. */
export interface ViewBlock {
  readonly rank: number;
  readonly kind: BlockKind;
  readonly lane: LaneKind;
  readonly t0: number;
  readonly t1: number;
  readonly event: ChartEvent;
}

/** Events of the shown pass (a measured job has no passes: all its events, or none for one pass). */
export function shownEvents(tl: ChartTimeline, phase: PhaseView): ChartEvent[] {
  const events: readonly ChartEvent[] = tl.events;
  return phase === 'both' ? [...events] : events.filter((e) => eventPass(e) === phase);
}

/**
 * Blocks of the shown events, per lane and sorted by t0 (the order `visibleRange` needs): key
 * "rank:lane". A kernel's part slowed by a transfer sits in the compute lane under "rank:slowed"
 * (drawn on top). Exposed parts sit in the comm lane after the comm blocks (drawn on top), then the
 * `waits` (waiting for a straggler inside a collective) under "rank:wait".
 */
export function laneBlocks(
  events: readonly ChartEvent[],
  waits: readonly {
    readonly rank: number;
    readonly t0: number;
    readonly t1: number;
    readonly event: ChartEvent;
  }[] = [],
): Map<string, ViewBlock[]> {
  const out = new Map<string, ViewBlock[]>();
  const push = (key: string, b: ViewBlock): void => {
    const list = out.get(key);
    if (list) list.push(b);
    else out.set(key, [b]);
  };
  for (const e of events)
    push(`${e.rank}:${e.stream}`, { rank: e.rank, kind: e.stream, lane: e.stream, t0: e.t0, t1: e.t1, event: e });
  for (const e of events)
    for (const x of e.exposed)
      push(`${e.rank}:exposed`, { rank: e.rank, kind: 'exposed', lane: 'comm', t0: x.t0, t1: x.t1, event: e });
  for (const e of events) {
    const part = 'transfer' in e ? slowedPart(e as TransferEvent) : null;
    if (part) push(`${e.rank}:slowed`, { rank: e.rank, kind: 'slowed', lane: 'compute', ...part, event: e });
  }
  for (const w of waits)
    push(`${w.rank}:wait`, { rank: w.rank, kind: 'wait', lane: 'comm', t0: w.t0, t1: w.t1, event: w.event });
  for (const list of out.values()) list.sort((a, b) => a.t0 - b.t0);
  return out;
}

/** Per-rank totals of the shown events, ms: Σ compute, Σ comm, Σ exposed, and the rank's last end. */
export interface ShownTotals {
  readonly rank: number;
  readonly computeMs: number;
  readonly commMs: number;
  readonly exposedMs: number;
  readonly endMs: number;
}

/**
 * Totals per rank over the shown pass. For 'both' they are the timeline's own totals; for one
 * pass, sums over its events (each rank's compute ops run back to back and its collectives one
 * after another, so sums equal unions).
 */
export function shownTotals(tl: ChartTimeline, phase: PhaseView): ShownTotals[] {
  if (phase === 'both' || !isScheduled(tl))
    return tl.totals.map(({ rank, computeMs, commMs, exposedMs, endMs }) => ({
      rank,
      computeMs,
      commMs,
      exposedMs,
      endMs,
    }));
  return Array.from({ length: tl.ranks }, (_, rank) => {
    const mine = tl.events.filter((e) => e.rank === rank && e.phase === phase);
    const sum = (f: (e: ScheduledEvent) => number): number => mine.reduce((a, e) => a + f(e), 0);
    return {
      rank,
      computeMs: sum((e) => (e.stream === 'compute' ? e.t1 - e.t0 : 0)),
      commMs: sum((e) => (e.stream === 'comm' ? e.t1 - e.t0 : 0)),
      exposedMs: sum((e) => e.exposedMs),
      endMs: Math.max(0, ...mine.map((e) => e.t1)),
    };
  });
}

/** The shown span [t0, t1] in ms, the end of the shown pass and the rank that ends last (the lowest on ties). */
export function shownSpan(tl: ChartTimeline, phase: PhaseView): { t0: number; t1: number; endRank: number } {
  if (phase === 'both' || !isScheduled(tl)) return { t0: 0, t1: tl.stepMs, endRank: tl.slowestRank };
  const evs = shownEvents(tl, phase);
  if (evs.length === 0) return { t0: 0, t1: 0, endRank: 0 };
  const t0 = Math.min(...evs.map((e) => e.t0));
  const t1 = Math.max(...evs.map((e) => e.t1));
  const endRank = Math.min(...evs.filter((e) => e.t1 === t1).map((e) => e.rank));
  return { t0, t1, endRank };
}

/** Forward, backward and finalize spans over all ranks, ms (for the phase bands), of a scheduled step or a trace whose ranks marked their passes; a phase without events is left out. */
export function phaseSpans(events: readonly ChartEvent[]): { phase: OpPhase; t0: number; t1: number }[] {
  const spans: { phase: OpPhase; t0: number; t1: number }[] = [];
  for (const phase of ['forward', 'backward', 'finalize'] as const) {
    const evs = events.filter((e) => 'phase' in e && e.phase === phase);
    if (evs.length) spans.push({ phase, t0: Math.min(...evs.map((e) => e.t0)), t1: Math.max(...evs.map((e) => e.t1)) });
  }
  return spans;
}

/**
 * Index range [lo, hi) of `blocks` (sorted by t0, not overlapping each other) that intersect
 * [t0, t1]; binary search, so a frame costs O(log n + visible).
 */
export function visibleRange(blocks: readonly { t0: number; t1: number }[], t0: number, t1: number): [number, number] {
  let lo = 0;
  let hi = blocks.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (blocks[mid]!.t1 < t0) lo = mid + 1;
    else hi = mid;
  }
  let end = lo;
  let h = blocks.length;
  while (end < h) {
    const mid = (end + h) >> 1;
    if (blocks[mid]!.t0 <= t1) end = mid + 1;
    else h = mid;
  }
  return [lo, end];
}

/**
 * The first candidate (a list of lines) whose every line, plus `padPx` on each side, fits in
 * `widthPx` and whose lines fit in `heightPx` at `linePx` each; null when none fits.
 */
export function fitLabel(
  candidates: readonly (readonly string[])[],
  widthPx: number,
  heightPx: number,
  linePx: number,
  measure: (text: string) => number,
  padPx = 4,
): readonly string[] | null {
  for (const c of candidates) {
    if (c.length * linePx > heightPx) continue;
    if (c.every((line) => measure(line) + 2 * padPx <= widthPx)) return c;
  }
  return null;
}

/** A text width estimate for a proportional sans font: 0.6 em per character (generous, so labels never overflow). */
export function estimateTextWidth(fontPx: number): (text: string) => number {
  return (text) => text.length * fontPx * 0.6;
}
