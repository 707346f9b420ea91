import type { TraceEvent, TracePass } from './trace-event.ts';

/** Where events go; a rank owns one, a collective or kernel wrapper is handed it. */
export interface TraceSink {
  record(event: TraceEvent): void;
}

/** Keeps events in arrival order until drained. */
export class TraceRecorder implements TraceSink {
  private events: TraceEvent[] = [];
  private pass: TracePass | undefined;

  /** Records `event`, stamped with the pass set by setPass (unless it carries its own). */
  record(event: TraceEvent): void {
    this.events.push(this.pass === undefined || event.phase !== undefined ? event : { ...event, phase: this.pass });
  }

  /** The pass every event recorded from now on belongs to (TraceEvent.phase); undefined: none. */
  setPass(pass: TracePass | undefined): void {
    this.pass = pass;
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
