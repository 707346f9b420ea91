import type { TraceEvent } from './trace-event.ts';

/** Where events go; a rank owns one, a collective or kernel wrapper is handed it. */
export interface TraceSink {
  record(event: TraceEvent): void;
}

/** Keeps events in arrival order until drained. */
export class TraceRecorder implements TraceSink {
  private events: TraceEvent[] = [];

  record(event: TraceEvent): void {
    this.events.push(event);
  }

  /** Events recorded so far (oldest first), without removing them. */
  peek(): readonly TraceEvent[] {
    return this.events;
  }

  /** Replaces the events recorded from index `from` on by what `f` makes of each (e.g. a tag added). */
  annotate(from: number, f: (e: TraceEvent) => TraceEvent): void {
    for (let i = from; i < this.events.length; i++) this.events[i] = f(this.events[i]!);
  }

  /** Returns and forgets the recorded events. */
  drain(): TraceEvent[] {
    const out = this.events;
    this.events = [];
    return out;
  }
}

/** A sink that drops everything. */
export const discardTrace: TraceSink = { record: () => {} };
