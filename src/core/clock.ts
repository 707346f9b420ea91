import type { TracePhase } from './trace-event.ts';

/**
 * One clock for every rank: milliseconds since the Unix epoch, sub-millisecond resolution.
 * `performance.timeOrigin` differs per worker, `timeOrigin + now()` does not (up to clock jitter).
 */
export function sharedNow(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * Consecutive phases on the shared clock: each mark(name) closes the phase that began at the
 * previous mark (or at creation) and records it as `name`.
 */
export function phaseClock(): { phases: TracePhase[]; mark: (name: string) => void } {
  const phases: TracePhase[] = [];
  let t = sharedNow();
  return {
    phases,
    mark: (name) => {
      const now = sharedNow();
      phases.push({ name, t0: t, t1: now });
      t = now;
    },
  };
}
