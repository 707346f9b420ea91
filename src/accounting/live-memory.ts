import type { BufferClass, BufferRecord, StepMemoryRecord } from '../parallel/memory-record.ts';
import type { RankMemory } from './accounting.ts';

/** One allocation live over [t0, t1) (an op position or ms of the step), of class C. */
export interface LiveInterval<C extends string = string> {
  readonly class: C;
  readonly label: string;
  readonly bytes: number;
  readonly t0: number;
  readonly t1: number;
}

/** The most bytes live at once over a set of intervals, when, and which intervals (their indices) were alive then. */
export interface LivePeak {
  readonly peakBytes: number;
  readonly peakAt: number;
  readonly alive: readonly number[];
}

/**
 * The peak of live bytes: intervals sorted by their edges, an interval ending at t gone at t (frees
 * before allocations at one time), the first moment the running sum is highest. The peak is what is
 * alive together at one moment, not a sum of each class's maximum (seed M107).
 */
export function livePeak(intervals: readonly LiveInterval[]): LivePeak {
  const edges = intervals.flatMap((x, i) => [
    { t: x.t0, i, d: 1 },
    { t: x.t1, i, d: -1 },
  ]);
  edges.sort((a, b) => a.t - b.t || a.d - b.d);
  let bytes = 0;
  let peakBytes = 0;
  let peakAt = 0;
  let peakEdge = -1;
  edges.forEach((e, j) => {
    const x = intervals[e.i]!;
    if (x.t1 <= x.t0) return;
    bytes += e.d * x.bytes;
    if (e.d > 0 && bytes > peakBytes) {
      peakBytes = bytes;
      peakAt = e.t;
      peakEdge = j;
    }
  });
  // The intervals alive at the peak: the edges replayed up to it once (a Set keeps their order of opening).
  const live = new Set<number>();
  for (let j = 0; j <= peakEdge; j++) {
    const e = edges[j]!;
    const x = intervals[e.i]!;
    if (x.t1 <= x.t0) continue;
    if (e.d > 0) live.add(e.i);
    else live.delete(e.i);
  }
  const alive = [...live];
  return { peakBytes, peakAt, alive };
}

/** Live bytes per class on [t, next point's t): a step function, one point per distinct edge. */
export interface LivePoint<C extends string = string> {
  readonly t: number;
  readonly bytes: Readonly<Record<C, number>>;
}

/** The live bytes of `intervals` stacked by `classes`, as a step function over their edges. */
export function liveSeries<C extends string>(
  intervals: readonly LiveInterval<C>[],
  classes: readonly C[],
): LivePoint<C>[] {
  const ts = [...new Set(intervals.flatMap((x) => [x.t0, x.t1]))].sort((a, b) => a - b);
  return ts.map((t) => {
    const bytes = Object.fromEntries(classes.map((c) => [c, 0])) as Record<C, number>;
    for (const x of intervals) if (x.t0 <= t && t < x.t1) bytes[x.class] += x.bytes;
    return { t, bytes };
  });
}

/** A rank's live memory over its step: its intervals (buffers, then the staging pool's levels), the peak and what was alive at it. */
export interface RankLiveMemory {
  readonly rank: number;
  readonly ops: number;
  readonly intervals: readonly LiveInterval<BufferClass>[];
  /** The buffer behind intervals[i] (undefined for staging levels). */
  readonly buffers: readonly (BufferRecord | undefined)[];
  readonly peak: LivePeak;
  /** Σ bytes per class of every buffer the step made (staging: the pool's highest level). */
  readonly madeBytes: Readonly<Record<BufferClass, number>>;
}

/** The intervals, peak and class totals of one rank's record (positions are plan op indices). */
export function rankLiveMemory(r: StepMemoryRecord): RankLiveMemory {
  const intervals: LiveInterval<BufferClass>[] = r.buffers.map((b) => ({
    class: b.class,
    label: b.tensor,
    bytes: b.bytes,
    t0: b.allocAt,
    t1: b.freeAt,
  }));
  const buffers: (BufferRecord | undefined)[] = [...r.buffers];
  r.staging.forEach((s, i) => {
    const t1 = r.staging[i + 1]?.at ?? r.ops;
    if (s.bytes > 0 && t1 > s.at) {
      intervals.push({
        class: 'staging',
        label: 'staging pool (read-back and upload buffers)',
        bytes: s.bytes,
        t0: s.at,
        t1,
      });
      buffers.push(undefined);
    }
  });
  const madeBytes: Record<BufferClass, number> = {
    weights: 0,
    optimizerState: 0,
    gradients: 0,
    activations: 0,
    workspace: 0,
    staging: Math.max(0, ...r.staging.map((s) => s.bytes)),
  };
  for (const b of r.buffers) madeBytes[b.class] += b.bytes;
  return { rank: r.rank, ops: r.ops, intervals, buffers, peak: livePeak(intervals), madeBytes };
}

/** One class the accounting predicts, against what the rank made. */
export interface ClassCheck {
  readonly class: BufferClass;
  readonly predictedBytes: number;
  readonly recordedBytes: number;
}

/**
 * The accounting's memory (src/accounting/accounting.ts rankMemory) against the record, per class:
 * weights = parameterBytes, gradients = gradientBytes, activations kept for backward =
 * activationBytes, optimizer state 0 (the playground's step runs no optimizer). Workspace and
 * staging are not in the accounting (staging is the collectives' pool, kept across steps).
 */
export function accountingChecks(live: RankLiveMemory, predicted: RankMemory): ClassCheck[] {
  const pairs: [BufferClass, number][] = [
    ['weights', predicted.parameterBytes],
    ['optimizerState', 0],
    ['gradients', predicted.gradientBytes],
    ['activations', predicted.activationBytes],
  ];
  return pairs.map(([c, p]) => ({ class: c, predictedBytes: p, recordedBytes: live.madeBytes[c] }));
}
