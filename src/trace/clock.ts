/**
 * One clock for every rank: milliseconds since the Unix epoch, sub-millisecond resolution.
 * `performance.timeOrigin` differs per worker, `timeOrigin + now()` does not (up to clock jitter).
 */
export function sharedNow(): number {
  return performance.timeOrigin + performance.now();
}
