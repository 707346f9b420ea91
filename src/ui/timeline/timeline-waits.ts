// Who waits for whom inside the collectives of a drawn timeline (pure, no DOM): the one straggler
// analysis (schedule/stragglers.ts), through the scheduled step's, the measured job's or the ranks' trace's pairing.
import { measuredStragglers } from '../../kineto/measured-stragglers.ts';
import { stepStragglers } from '../../schedule/step-stragglers.ts';
import { tracedStragglers } from '../../schedule/traced-timeline.ts';
import type { StragglerVerdict } from '../../schedule/stragglers.ts';
import { formatMs } from '../../core/format.ts';
import type { ChartEvent, ChartTimeline } from './timeline-layout.ts';

/** A rank's wait inside one collective, ms on the timeline's clock: [its entry, the straggler's entry). */
export interface WaitPart {
  readonly rank: number;
  readonly t0: number;
  readonly t1: number;
  /** The rank that entered the collective last. */
  readonly straggler: number;
  /** The waiting rank's event of that collective. */
  readonly event: ChartEvent;
}

/** The waits of a timeline and the verdict over its collectives. */
export interface TimelineStragglers {
  readonly waits: readonly WaitPart[];
  readonly verdict: StragglerVerdict;
}

/**
 * The waits of `tl`: a scheduled step's collectives by plan op (stepStragglers), a measured
 * window's NCCL kernels paired in each group's order (measuredStragglers), a traced window's
 * all-to-alls by group and sequence number (tracedStragglers).
 */
export function timelineStragglers(tl: ChartTimeline): TimelineStragglers {
  let out = analysed.get(tl);
  if (!out) analysed.set(tl, (out = analyse(tl)));
  return out;
}

// The chart and the element's head both ask for it; timelines are immutable.
const analysed = new WeakMap<ChartTimeline, TimelineStragglers>();

function analyse(tl: ChartTimeline): TimelineStragglers {
  const waits: WaitPart[] = [];
  if ('traced' in tl) {
    const byStart = new Map<string, ChartEvent>();
    for (const e of tl.events) if (e.comm?.peers) byStart.set(`${e.rank}:${e.t0}`, e);
    const a = tracedStragglers(tl);
    for (const c of a.calls)
      for (const w of c.result.waits) {
        const event = byStart.get(`${w.rank}:${w.t0}`);
        if (event && c.result.straggler !== null) waits.push({ ...w, straggler: c.result.straggler, event });
      }
    return { waits, verdict: a.verdict };
  }
  if ('measured' in tl) {
    const byStart = new Map<string, ChartEvent>();
    for (const e of tl.events) if (e.stream === 'comm') byStart.set(`${e.rank}:${e.slice.t0}`, e);
    const a = measuredStragglers(tl.events.map((e) => e.slice));
    for (const c of a.calls)
      for (const w of c.result.waits) {
        const event = byStart.get(`${w.rank}:${w.t0}`);
        if (event && c.result.straggler !== null)
          waits.push({
            rank: w.rank,
            t0: w.t0 - tl.originMs,
            t1: w.t1 - tl.originMs,
            straggler: c.result.straggler,
            event,
          });
      }
    return { waits, verdict: a.verdict };
  }
  const byOp = new Map<string, ChartEvent>();
  for (const e of tl.events) if (e.stream === 'comm') byOp.set(`${e.rank}:${e.opIndex}`, e);
  const a = stepStragglers(tl);
  for (const c of a.calls)
    for (const w of c.result.waits) {
      const event = byOp.get(`${w.rank}:${c.key.opIndex}`);
      if (event && c.result.straggler !== null) waits.push({ ...w, straggler: c.result.straggler, event });
    }
  return { waits, verdict: a.verdict };
}

/** "waited 4 ms" (one rank), "each waited 4 ms" (all the same), "waited 4 ms, 2 ms and 1 ms". */
function waitedWords(times: readonly string[], list: (xs: readonly string[]) => string): string {
  if (times.length > 1 && times.every((t) => t === times[0])) return `each waited ${times[0]}`;
  return `waited ${list(times)}`;
}

/**
 * The verdict in words: "Straggler: rank 2 entered 12 of 12 collectives last; ranks 0, 1 and 3
 * each waited 4.2 ms inside them: their long collectives are waiting for rank 2, not slow." Null
 * when nobody waited.
 */
export function stragglerSentence(v: StragglerVerdict): string | null {
  if (v.straggler === null) return null;
  const s = v.ranks.find((r) => r.rank === v.straggler)!;
  const waiting = v.ranks.filter((r) => r.rank !== v.straggler && r.waitedMs > 0);
  const list = (xs: readonly string[]): string =>
    xs.length < 2 ? (xs[0] ?? '') : `${xs.slice(0, -1).join(', ')} and ${xs[xs.length - 1]}`;
  const who = `rank${waiting.length > 1 ? 's' : ''} ${list(waiting.map((r) => String(r.rank)))}`;
  return (
    `Straggler: rank ${s.rank} entered ${s.lastIn} of ${v.calls} collectives last; ` +
    `${who} ${waitedWords(
      waiting.map((r) => formatMs(r.waitedMs)),
      list,
    )} inside them: ` +
    `their long collectives are waiting for rank ${s.rank}, not slow.`
  );
}
