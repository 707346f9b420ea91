/**
 * Half-open time intervals [t0, t1) and set operations on them. A union is a sorted list of
 * disjoint intervals; intervals that touch (a.t1 = b.t0) merge. Empty intervals (t1 ≤ t0) are
 * dropped. Units are whatever the caller uses (the trace uses ms).
 */
export interface Interval {
  readonly t0: number;
  readonly t1: number;
}

/** Sum of lengths of `xs` (ms when the intervals are in ms); overlaps count twice unless `xs` is a union. */
export function totalLength(xs: readonly Interval[]): number {
  return xs.reduce((a, x) => a + Math.max(0, x.t1 - x.t0), 0);
}

/** The union of `xs` as sorted, disjoint, non-empty intervals; touching intervals merge. */
export function unionIntervals(xs: readonly Interval[]): Interval[] {
  const sorted = xs.filter((x) => x.t1 > x.t0).sort((a, b) => a.t0 - b.t0);
  const out: { t0: number; t1: number }[] = [];
  for (const x of sorted) {
    const last = out[out.length - 1];
    if (last && x.t0 <= last.t1) last.t1 = Math.max(last.t1, x.t1);
    else out.push({ t0: x.t0, t1: x.t1 });
  }
  return out;
}

/** union(a) − union(b): the parts of `a` covered by no interval of `b`, sorted and disjoint. */
export function subtractIntervals(a: readonly Interval[], b: readonly Interval[]): Interval[] {
  const cut = unionIntervals(b);
  const out: Interval[] = [];
  for (const x of unionIntervals(a)) {
    let t0 = x.t0;
    for (const c of cut) {
      if (c.t1 <= t0) continue;
      if (c.t0 >= x.t1) break;
      if (c.t0 > t0) out.push({ t0, t1: c.t0 });
      t0 = Math.max(t0, c.t1);
      if (t0 >= x.t1) break;
    }
    if (t0 < x.t1) out.push({ t0, t1: x.t1 });
  }
  return out;
}

/** union(a) ∩ union(b), sorted and disjoint. */
export function intersectIntervals(a: readonly Interval[], b: readonly Interval[]): Interval[] {
  const ua = unionIntervals(a);
  return subtractIntervals(ua, subtractIntervals(ua, b));
}
