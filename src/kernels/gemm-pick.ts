import type { GemmVariant } from './gemm-variants.ts';

/**
 * Whether a variant that ran in `ms` per run is launch-bound: within two dispatch floors. Nothing
 * runs faster than one floor, so such a variant is within one dispatch of the fastest there could
 * be, a difference the timing cannot tell from noise.
 */
export function launchBound(ms: number, dispatchMs: number): boolean {
  return ms <= 2 * dispatchMs;
}

/**
 * The winner among timed variants (ms per run): the fastest, except that launch-bound variants
 * tie with it, and a tie goes to the variant cheapest to compile (`byCompileCost` lists them
 * cheapest first) — every rank's device compiles each variant it uses, and the page pays that
 * again for every rank it starts. Above the launch-bound regime the fastest wins outright (when
 * variants were timed on shrunken problems, two 10% apart there were 20–30% apart at full size).
 */
export function pickGemmVariant(
  msPerRun: Partial<Record<GemmVariant, number>>,
  byCompileCost: readonly GemmVariant[],
  dispatchMs: number,
): { chosen: GemmVariant; tied: GemmVariant[] } | undefined {
  const timed = byCompileCost.filter((v) => msPerRun[v] !== undefined);
  if (!timed.length) return undefined;
  const best = Math.min(...timed.map((v) => msPerRun[v]!));
  const tied = timed.filter((v) => msPerRun[v] === best || launchBound(msPerRun[v]!, dispatchMs));
  return { chosen: tied[0], tied };
}

/** How timeCandidates samples: trials per candidate, repeats of a close race, its noise floor. */
export interface TimingPlan {
  /** Trials per candidate in the first pass (a candidate already `dropAbove`× slower than the best gets one). */
  readonly trials: number;
  /** At most this many extra rounds (one trial each of the best two) while they are within the noise. */
  readonly maxRepeats: number;
  /** The noise is never taken below this relative spread (timer resolution, one busy moment). */
  readonly minNoise: number;
  /** A candidate whose first trial is this many times the best so far is not timed again. */
  readonly dropAbove: number;
}

/** Defaults of timeCandidates. */
export const defaultTimingPlan: TimingPlan = { trials: 2, maxRepeats: 3, minNoise: 0.02, dropAbove: 2 };

/** What timeCandidates measured: every trial, the best per candidate, and how the race ended. */
export interface CandidateTimes {
  /** Best (lowest) ms per run of each timed candidate: timings on a shared machine only err upwards. */
  readonly msPerRun: Partial<Record<GemmVariant, number>>;
  /** Every trial, ms per run, in the order taken. */
  readonly samples: Partial<Record<GemmVariant, number[]>>;
  readonly launchBound: boolean;
  /** Extra rounds run because the best two were within the noise. */
  readonly repeats: number;
  /** The relative noise the last comparison of the best two used: max(their spreads, minNoise) (see spread). */
  readonly noise: number;
}

/**
 * How reproducible the best of repeated timings is: (second lowest − lowest) / lowest; 0 for one
 * sample. The best trial is the estimate (a shared machine only adds time), so a slow outlier does
 * not count as noise, while two best trials far apart do.
 */
export function spread(samples: readonly number[]): number {
  if (samples.length < 2) return 0;
  const [lo, next] = [...samples].sort((a, b) => a - b);
  return lo > 0 ? (next - lo) / lo : 0;
}

/**
 * The best two candidates by their best trial, whether their gap exceeds the noise (the larger of
 * their spreads and `minNoise`), and that noise; undefined with fewer than two.
 */
export function closestRace(
  samples: Partial<Record<GemmVariant, number[]>>,
  minNoise: number,
): { first: GemmVariant; second: GemmVariant; apart: boolean; noise: number } | undefined {
  const ranked = (Object.entries(samples) as [GemmVariant, number[]][])
    .map(([v, xs]) => ({ v, best: Math.min(...xs), xs }))
    .sort((a, b) => a.best - b.best);
  if (ranked.length < 2) return undefined;
  const [a, b] = ranked;
  const noise = Math.max(spread(a.xs), spread(b.xs), minNoise);
  return { first: a.v, second: b.v, apart: (b.best - a.best) / a.best > noise, noise };
}

/**
 * Times `candidates` in order (cheapest compile first) with `time` (one trial: ms per run, or
 * undefined for a variant that is skipped: unverified here, or naive on a large problem). If the
 * first one timed is launch-bound it wins whatever the others would measure, so they are neither
 * compiled nor timed. Otherwise every candidate gets one trial, then `trials` − 1 more rounds go
 * round those within `dropAbove`× of the best first trial, and while the best two are within the
 * measured noise of each other they are timed again, one trial each, up to `maxRepeats` rounds.
 */
export async function timeCandidates(
  candidates: readonly GemmVariant[],
  time: (v: GemmVariant) => Promise<number | undefined>,
  dispatchMs: number,
  plan: TimingPlan = defaultTimingPlan,
): Promise<CandidateTimes> {
  const samples: Partial<Record<GemmVariant, number[]>> = {};
  const result = (launch: boolean, repeats: number, noise: number): CandidateTimes => ({
    msPerRun: Object.fromEntries(Object.entries(samples).map(([v, xs]) => [v, Math.min(...xs)])),
    samples,
    launchBound: launch,
    repeats,
    noise,
  });
  for (const v of candidates) {
    const ms = await time(v);
    if (ms === undefined) continue;
    samples[v] = [ms];
    if (Object.keys(samples).length === 1 && launchBound(ms, dispatchMs)) return result(true, 0, 0);
  }
  // Later trials go round the candidates, so a busy spell on a shared machine slows them alike.
  const timed = Object.keys(samples) as GemmVariant[];
  const best = Math.min(...timed.map((v) => samples[v]![0]));
  const contenders = timed.filter((v) => samples[v]![0] <= plan.dropAbove * best);
  for (let k = 1; k < plan.trials; k++)
    for (const v of contenders) {
      const again = await time(v);
      if (again !== undefined) samples[v]!.push(again);
    }
  let repeats = 0;
  let race = closestRace(samples, plan.minNoise);
  while (race && !race.apart && repeats < plan.maxRepeats) {
    for (const v of [race.first, race.second]) {
      const again = await time(v);
      if (again !== undefined) samples[v]!.push(again);
    }
    repeats++;
    race = closestRace(samples, plan.minNoise);
  }
  return result(false, repeats, race?.noise ?? 0);
}
