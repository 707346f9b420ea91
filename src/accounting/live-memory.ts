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
 * alive together at one moment, not a sum of each class's maximum (seed 004 M107, docs/sources.md).
 */
export function livePeak(intervals: readonly LiveInterval[]): LivePeak {
  const p = peakOfColumns(
    intervals.map((x) => x.t0),
    intervals.map((x) => x.t1),
    intervals.map((x) => x.bytes),
  );
  // The intervals alive at the peak: the edges replayed up to it once (a Set keeps their order of opening).
  const live = new Set<number>();
  for (let j = 0; j <= p.peakEdge; j++) {
    const e = p.edges[j]!;
    const i = e >> 1;
    const x = intervals[i]!;
    if (x.t1 <= x.t0) continue;
    if ((e & 1) === 0) live.add(i);
    else live.delete(i);
  }
  const alive = [...live];
  return { peakBytes: p.peakBytes, peakAt: p.peakAt, alive };
}

/**
 * livePeak's sweep over intervals given as columns (interval i is [t0[i], t1[i]) holding
 * bytes[i]): edge 2i opens interval i, edge 2i + 1 closes it; `edges` in sweep order (by time,
 * closes before opens at one time, else in interval order) and the index of the edge where the
 * peak is reached (−1 when nothing is ever alive).
 */
export function peakOfColumns(
  t0: ArrayLike<number>,
  t1: ArrayLike<number>,
  bytes: ArrayLike<number>,
): { peakBytes: number; peakAt: number; edges: readonly number[]; peakEdge: number } {
  const n = t0.length;
  const edges = new Array<number>(2 * n);
  for (let e = 0; e < 2 * n; e++) edges[e] = e;
  const time = (e: number): number => (e & 1 ? t1[e >> 1]! : t0[e >> 1]!);
  // Opens are +1, closes −1: a close sorts first at an equal time. Array sort is stable.
  edges.sort((a, b) => time(a) - time(b) || (b & 1) - (a & 1));
  let live = 0;
  let peakBytes = 0;
  let peakAt = 0;
  let peakEdge = -1;
  for (let j = 0; j < edges.length; j++) {
    const e = edges[j]!;
    const i = e >> 1;
    if (t1[i]! <= t0[i]!) continue;
    const d = e & 1 ? -1 : 1;
    live += d * bytes[i]!;
    if (d > 0 && live > peakBytes) {
      peakBytes = live;
      peakAt = t0[i]!;
      peakEdge = j;
    }
  }
  return { peakBytes, peakAt, edges, peakEdge };
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
