// Stragglers (seed 004 M108, docs/sources.md): inside a collective every rank waits for the last one to
// enter it, so the ranks that wait look slow (their collective is long) while the cause is the rank
// that entered last. One definition for the playground's scheduled step and for measured (Kineto) jobs.

/** One rank's part of one collective call: it entered at t0 and left at t1, ms on one clock. */
export interface CollectiveEntry {
  readonly rank: number;
  readonly t0: number;
  readonly t1: number;
}

/** The part of a rank's collective spent waiting for the last rank to enter: [t0, t1), ms. */
export interface CollectiveWait {
  readonly rank: number;
  readonly t0: number;
  readonly t1: number;
}

/** Who waited for whom inside one collective call. */
export interface CallStraggler {
  /** The rank that entered last (the lowest on ties); null when every rank entered at once. */
  readonly straggler: number | null;
  /** When the last rank entered: the transfer can start no earlier, ms. */
  readonly lastEnterMs: number;
  /** How much later the straggler entered than the first rank, ms (0 without a straggler). */
  readonly lateMs: number;
  /** The other ranks' waiting, [own entry, last entry), those with a positive wait only. */
  readonly waits: readonly CollectiveWait[];
}

/** Index of the largest value (the first on ties): the rank that arrived last, given arrival times by rank. */
export function lastEntrant(t0s: readonly number[]): number {
  let last = 0;
  t0s.forEach((t, i) => {
    if (t > t0s[last]!) last = i;
  });
  return last;
}

/**
 * The straggler of one collective call: the rank whose entry is the latest. Every other rank's
 * time in [its entry, that entry) is waiting, not slowness. A call with one entry, or whose
 * entries all lie within `toleranceMs` of the first, has no straggler.
 */
export function callStraggler(entries: readonly CollectiveEntry[], toleranceMs = 0): CallStraggler {
  if (!(toleranceMs >= 0)) throw new Error(`callStraggler: toleranceMs is ${toleranceMs}; it must be ≥ 0.`);
  if (!entries.length) return { straggler: null, lastEnterMs: 0, lateMs: 0, waits: [] };
  const last = entries[lastEntrant(entries.map((e) => e.t0))]!;
  const first = Math.min(...entries.map((e) => e.t0));
  const lateMs = last.t0 - first;
  if (entries.length < 2 || lateMs <= toleranceMs)
    return { straggler: null, lastEnterMs: last.t0, lateMs: 0, waits: [] };
  const waits = entries
    .filter((e) => e.rank !== last.rank && e.t0 < last.t0)
    .map((e) => ({ rank: e.rank, t0: e.t0, t1: last.t0 }));
  return { straggler: last.rank, lastEnterMs: last.t0, lateMs, waits };
}

/** One rank over many collective calls. */
export interface RankStraggling {
  readonly rank: number;
  /** Calls this rank entered last. */
  readonly lastIn: number;
  /** Σ of the other ranks' waiting in those calls, ms: the waiting this rank caused. */
  readonly causedMs: number;
  /** Σ of this rank's own waiting inside collectives, ms. */
  readonly waitedMs: number;
}

/** The verdict over a window's collective calls. */
export interface StragglerVerdict {
  /** The rank that caused the most waiting (the lowest on ties); null when nobody waited. */
  readonly straggler: number | null;
  readonly calls: number;
  /** Calls with a straggler. */
  readonly callsWithStraggler: number;
  /** Per rank seen in any call, ascending. */
  readonly ranks: readonly RankStraggling[];
}

/** One collective call, its entries by rank, and who waited for whom; `key` says which call it is. */
export interface StragglerCall<K> {
  readonly key: K;
  readonly entries: readonly CollectiveEntry[];
  readonly result: CallStraggler;
}

/** Every call of a window with its straggler, and the verdict over them. */
export interface StragglerAnalysis<K> {
  readonly calls: readonly StragglerCall<K>[];
  readonly verdict: StragglerVerdict;
}

/** `callStraggler` on each call, then `stragglerVerdict` over them. */
export function analyseStragglers<K>(
  calls: readonly { readonly key: K; readonly entries: readonly CollectiveEntry[] }[],
  toleranceMs = 0,
): StragglerAnalysis<K> {
  const out = calls.map((c) => ({ ...c, result: callStraggler(c.entries, toleranceMs) }));
  return { calls: out, verdict: stragglerVerdict(out) };
}

/** Sums `callStraggler` results: who entered last how often, the waiting each rank caused and suffered. */
export function stragglerVerdict(
  calls: readonly { readonly entries: readonly CollectiveEntry[]; readonly result: CallStraggler }[],
): StragglerVerdict {
  const by = new Map<number, { rank: number; lastIn: number; causedMs: number; waitedMs: number }>();
  const of = (rank: number) => {
    let r = by.get(rank);
    if (!r) by.set(rank, (r = { rank, lastIn: 0, causedMs: 0, waitedMs: 0 }));
    return r;
  };
  let withStraggler = 0;
  for (const { entries, result } of calls) {
    for (const e of entries) of(e.rank);
    if (result.straggler === null) continue;
    withStraggler++;
    const s = of(result.straggler);
    s.lastIn++;
    for (const w of result.waits) {
      s.causedMs += w.t1 - w.t0;
      of(w.rank).waitedMs += w.t1 - w.t0;
    }
  }
  const ranks = [...by.values()].sort((a, b) => a.rank - b.rank);
  const top = ranks.reduce<(typeof ranks)[number] | undefined>(
    (b, r) => (!b || r.causedMs > b.causedMs ? r : b),
    undefined,
  );
  return {
    straggler: top && top.causedMs > 0 ? top.rank : null,
    calls: calls.length,
    callsWithStraggler: withStraggler,
    ranks,
  };
}

/**
 * Pairs the collectives of several ranks into calls: within one group (`groupOf`), a rank's k-th
 * collective in time order belongs to the group's k-th call — collectives of a process group are
 * issued in the same order on every member (NCCL requires it). Returns the calls in order of
 * their first entry.
 */
export function matchCalls<S>(
  items: readonly S[],
  rankOf: (s: S) => number,
  t0Of: (s: S) => number,
  groupOf: (s: S) => string = () => '',
): S[][] {
  const seen = new Map<string, number>();
  const calls = new Map<string, S[]>();
  for (const s of [...items].sort((a, b) => t0Of(a) - t0Of(b))) {
    const rk = `${groupOf(s)}\u0000${rankOf(s)}`;
    const k = seen.get(rk) ?? 0;
    seen.set(rk, k + 1);
    const key = `${groupOf(s)}\u0000${k}`;
    const list = calls.get(key);
    if (list) list.push(s);
    else calls.set(key, [s]);
  }
  return [...calls.values()];
}
