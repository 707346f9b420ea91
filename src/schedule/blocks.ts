import type { ScheduledEvent, Timeline } from './schedule.ts';

/**
 * What a timeline block shows; the view's `data-kind`. `wait`: the part of a collective a rank
 * spends waiting for the last rank to enter it (schedule/stragglers.ts), drawn by the view.
 * `slowed`: the end of a kernel's block that a ring transfer sharing its cores added
 * (transfer-slowdown.ts slowedPart), drawn by the view.
 */
export type BlockKind = 'compute' | 'comm' | 'exposed' | 'wait' | 'slowed';

/** One drawable block: a compute op, a collective, or an exposed part of a collective; ms from the step's start. */
export interface TimelineBlock {
  readonly rank: number;
  readonly kind: BlockKind;
  readonly opIndex: number;
  readonly op: string;
  readonly t0: number;
  readonly t1: number;
  /** The scheduled event the block belongs to (for an exposed block: its collective). */
  readonly event: ScheduledEvent;
}

/** Every block of a timeline: each event as `compute` or `comm`, then each exposed sub-interval as `exposed`. */
export function timelineBlocks(tl: Timeline): TimelineBlock[] {
  const out: TimelineBlock[] = [];
  for (const e of tl.events) {
    out.push({ rank: e.rank, kind: e.stream, opIndex: e.opIndex, op: e.op, t0: e.t0, t1: e.t1, event: e });
  }
  for (const e of tl.events) {
    for (const x of e.exposed)
      out.push({ rank: e.rank, kind: 'exposed', opIndex: e.opIndex, op: e.op, t0: x.t0, t1: x.t1, event: e });
  }
  return out;
}
