// Exposed communication, overlap, per-collective totals, steps and stragglers of a measured job,
// computed with the playground's own exposed-communication code (exposed.ts).
import { exposedComm, exposedParts, type TimedSlice } from '../schedule/exposed.ts';
import { totalLength, unionIntervals } from '../schedule/intervals.ts';
import type { GpuSlice, MeasuredTrace } from './kineto-types.ts';
import type { NcclCollective } from './nccl-kernel.ts';
import { groupDimOf, type GroupDim } from './process-group.ts';

/** Totals of one collective kind on one rank (or over all ranks), ms. */
export interface CollectiveTotal {
  readonly collective: NcclCollective;
  /** Process group description or name where recorded, else "". */
  readonly group: string;
  /** The parallel dimension of that group where Megatron-Core's description says it (process-group.ts). */
  readonly dim: GroupDim | undefined;
  readonly count: number;
  /** Σ kernel durations, ms (an NCCL kernel's time includes waiting for the slowest peer). */
  readonly ms: number;
  /** Σ over the kernels of the part no compute kernel of the rank covers, ms. */
  readonly exposedMs: number;
  /** Σ payload bytes where recorded (nccl-tests convention); 0 when none is. */
  readonly bytes: number;
}

/** One rank over a window (the whole trace or one step), ms. */
export interface RankWindow {
  readonly rank: number;
  /** First GPU activity start and last end in the window. */
  readonly t0: number;
  readonly t1: number;
  /** |union(compute kernels)|, |union(NCCL kernels)|, |union(comm) − union(compute)|. */
  readonly computeMs: number;
  readonly commMs: number;
  readonly exposedMs: number;
  /** Share of communication time hidden under compute: 1 − exposed/comm; null without communication. */
  readonly overlap: number | null;
  /** |union(memcpy ∪ memset)|: neither compute nor communication, counted apart. */
  readonly memoryMs: number;
  readonly kernels: number;
  readonly collectives: readonly CollectiveTotal[];
}

/** One ProfilerStep#N over the ranks that have it. */
export interface StepSummary {
  readonly step: number;
  readonly ranks: readonly RankWindow[];
  /** The rank whose GPU work in the step spans longest (t1 − t0); the step is as slow as it. */
  readonly slowestRank: number;
  readonly spanMs: number;
  /** The rank with the most compute in the step: the one its peers wait for inside their NCCL kernels. */
  readonly straggler: number;
}

/** The analysis of a measured job. */
export interface MeasuredAnalysis {
  /** Per rank over the whole trace. */
  readonly ranks: readonly RankWindow[];
  /** Per collective kind and group over all ranks. */
  readonly collectives: readonly CollectiveTotal[];
  readonly steps: readonly StepSummary[];
  /** The rank with the most exposed communication over the whole trace. */
  readonly worstRank: number;
}

/** The compute and NCCL slices as the overlap analysis takes them (memcpy/memset left out). */
export function overlapSlices(slices: readonly GpuSlice[]): TimedSlice[] {
  const out: TimedSlice[] = [];
  for (const s of slices)
    if (s.work === 'compute' || s.work === 'comm') out.push({ rank: s.rank, stream: s.work, t0: s.t0, t1: s.t1 });
  return out;
}

function collectiveTotals(comm: readonly GpuSlice[], compute: ReturnType<typeof unionIntervals>): CollectiveTotal[] {
  const by = new Map<
    string,
    {
      collective: NcclCollective;
      group: string;
      dim: GroupDim | undefined;
      count: number;
      ms: number;
      exposedMs: number;
      bytes: number;
    }
  >();
  for (const s of comm) {
    const collective = s.nccl?.collective ?? 'unknown';
    const group = s.nccl?.groupDesc ?? s.nccl?.groupName ?? '';
    const key = `${collective}\u0000${group}`;
    let t = by.get(key);
    if (!t)
      by.set(
        key,
        (t = { collective, group, dim: groupDimOf(s.nccl?.groupDesc), count: 0, ms: 0, exposedMs: 0, bytes: 0 }),
      );
    t.count++;
    t.ms += s.t1 - s.t0;
    t.exposedMs += totalLength(exposedParts(s, compute));
    t.bytes += s.nccl?.bytes ?? 0;
  }
  return [...by.values()].sort((a, b) => b.ms - a.ms);
}

/** One rank's numbers over its slices `mine` (already restricted to the window). */
export function rankWindow(rank: number, mine: readonly GpuSlice[]): RankWindow {
  const [exp] = exposedComm(overlapSlices(mine));
  const compute = unionIntervals(mine.filter((s) => s.work === 'compute'));
  const memoryMs = totalLength(unionIntervals(mine.filter((s) => s.work === 'memcpy' || s.work === 'memset')));
  const commMs = exp?.commMs ?? 0;
  const exposedMs = exp?.exposedMs ?? 0;
  return {
    rank,
    t0: mine.length ? mine.reduce((m, s) => Math.min(m, s.t0), Infinity) : 0,
    t1: mine.length ? mine.reduce((m, s) => Math.max(m, s.t1), -Infinity) : 0,
    computeMs: exp?.computeMs ?? 0,
    commMs,
    exposedMs,
    overlap: commMs > 0 ? 1 - exposedMs / commMs : null,
    memoryMs,
    kernels: mine.filter((s) => s.work === 'compute' || s.work === 'comm').length,
    collectives: collectiveTotals(
      mine.filter((s) => s.work === 'comm'),
      compute,
    ),
  };
}

/** Merges per-rank collective totals into totals over all ranks. */
function mergeTotals(lists: readonly (readonly CollectiveTotal[])[]): CollectiveTotal[] {
  const by = new Map<string, CollectiveTotal>();
  for (const t of lists.flat()) {
    const key = `${t.collective}\u0000${t.group}`;
    const x = by.get(key);
    by.set(
      key,
      x
        ? {
            ...x,
            count: x.count + t.count,
            ms: x.ms + t.ms,
            exposedMs: x.exposedMs + t.exposedMs,
            bytes: x.bytes + t.bytes,
          }
        : t,
    );
  }
  return [...by.values()].sort((a, b) => b.ms - a.ms);
}

const argmax = (xs: readonly RankWindow[], f: (w: RankWindow) => number): RankWindow =>
  xs.reduce((best, w) => (f(w) > f(best) ? w : best));

/**
 * Per rank: exposed communication = |union(NCCL kernels) − union(compute kernels)| on that GPU
 * (`exposedComm`, the definition the playground's own timeline uses), overlap ratio, per-collective
 * totals; per ProfilerStep#N: the same per rank, the slowest rank and the straggler.
 */
export function analyseMeasured(trace: MeasuredTrace): MeasuredAnalysis {
  const ranks = trace.ranks.map((r) => rankWindow(r.rank, r.slices));
  const stepIds = [...new Set(trace.ranks.flatMap((r) => r.steps.map((s) => s.step)))].sort((a, b) => a - b);
  const steps: StepSummary[] = [];
  for (const step of stepIds) {
    const windows = trace.ranks
      .filter((r) => r.steps.some((s) => s.step === step))
      .map((r) =>
        rankWindow(
          r.rank,
          r.slices.filter((s) => s.step === step),
        ),
      )
      .filter((w) => w.kernels > 0);
    if (!windows.length) continue;
    const slowest = argmax(windows, (w) => w.t1 - w.t0);
    steps.push({
      step,
      ranks: windows,
      slowestRank: slowest.rank,
      spanMs: slowest.t1 - slowest.t0,
      straggler: argmax(windows, (w) => w.computeMs).rank,
    });
  }
  return {
    ranks,
    collectives: mergeTotals(ranks.map((r) => r.collectives)),
    steps,
    worstRank: argmax(ranks, (w) => w.exposedMs).rank,
  };
}
