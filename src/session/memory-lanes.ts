import type { RankMemory } from '../accounting/accounting.ts';
import { livePeak, rankLiveMemory, type LiveInterval, type LivePeak } from '../accounting/live-memory.ts';
import { bufferClasses, type BufferClass, type StepMemoryRecord } from '../parallel/memory-record.ts';
import {
  lifetimeOfBuffer,
  memoryClasses,
  type MemoryClass,
  type StageMemory,
} from '../projection/pipeline/memory-timeline.ts';
import type { Timeline } from '../schedule/schedule.ts';

/** One class of a memory chart: its key, its words, its lifetime in the projection's vocabulary. */
export interface MemoryClassView {
  readonly key: string;
  readonly label: string;
  /** The lifetime class it belongs to (src/projection/pipeline/memory-timeline.ts). */
  readonly lifetime: MemoryClass;
}

/** One lane of a memory chart: live bytes over [0, end) ms, its peak and what the accounting predicts. */
export interface MemoryLane {
  readonly title: string;
  readonly intervals: readonly LiveInterval[];
  readonly end: number;
  readonly peak: LivePeak;
  /** The accounting's prediction, drawn as a level beside the measured stack. */
  readonly predicted?: { readonly label: string; readonly bytes: number };
}

const bufferWords: Readonly<Record<BufferClass, string>> = {
  weights: 'weights',
  optimizerState: 'optimizer state',
  gradients: 'gradients',
  activations: 'activations kept for backward',
  workspace: 'transient workspace',
  staging: 'communication staging',
};

/** The ranks' buffer classes as a chart shows them, each with its lifetime (lifetimeOfBuffer). */
export const bufferClassViews: readonly MemoryClassView[] = bufferClasses.map((c) => ({
  key: c,
  label: bufferWords[c],
  lifetime: lifetimeOfBuffer[c],
}));

const lifetimeWords: Readonly<Record<MemoryClass, string>> = {
  resident: 'resident (weights, main weights, optimizer)',
  perStep: 'per step (gradient buffer)',
  perMicroBatch: 'per micro-batch (activations in flight)',
  transient: 'transient',
};

/** The projection's lifetime classes as a chart shows them. */
export const lifetimeClassViews: readonly MemoryClassView[] = memoryClasses.map((c) => ({
  key: c,
  label: lifetimeWords[c],
  lifetime: c,
}));

/**
 * Op position p of `rank` → ms: the start of plan op p on the timeline, never earlier than an
 * earlier position's (asynchronous collectives start after later compute); the step's op count → the rank's end.
 */
function positionMs(tl: Timeline, rank: number, ops: number): (p: number) => number {
  const start = new Array<number>(ops + 1).fill(Number.NaN);
  for (const e of tl.events)
    if (e.rank === rank && e.opIndex < ops) start[e.opIndex] = Math.min(e.t0, start[e.opIndex] || Infinity);
  start[ops] = tl.totals[rank]?.endMs ?? 0;
  let last = 0;
  for (let p = 0; p <= ops; p++) start[p] = last = Math.max(last, Number.isNaN(start[p]) ? last : start[p]);
  return (p) => start[Math.min(Math.max(p, 0), ops)]!;
}

/**
 * One lane per rank: its recorded buffers (and the staging pool's level) placed on the step's
 * timeline, the peak of what is live together, and the accounting's 2P + A beside it.
 */
export function rankMemoryLanes(
  records: readonly StepMemoryRecord[],
  timeline: Timeline,
  predicted: readonly RankMemory[],
): MemoryLane[] {
  return records.map((r) => {
    const live = rankLiveMemory(r);
    const ms = positionMs(timeline, r.rank, r.ops);
    const intervals = live.intervals.map((x) => ({ ...x, t0: ms(x.t0), t1: ms(x.t1) }));
    const m = predicted[r.rank];
    return {
      title: `rank ${r.rank}`,
      intervals,
      end: ms(r.ops),
      peak: livePeak(intervals),
      ...(m && {
        predicted: { label: 'accounting: weights + gradients + activations', bytes: m.totalBytes },
      }),
    };
  });
}

/** One lane per pipeline stage of a projected step (its lifetime intervals over the step). */
export function stageMemoryLanes(stages: readonly StageMemory[], endMs: number): MemoryLane[] {
  return stages.map((s) => ({
    title: `stage ${s.stage}`,
    intervals: s.intervals,
    end: endMs,
    peak: livePeak(s.intervals),
  }));
}
