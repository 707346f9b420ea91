// A window of a measured job (one ProfilerStep#N or the whole trace) as the playground's timeline draws it.
import { exposedParts } from '../schedule/exposed.ts';
import type { Interval } from '../schedule/intervals.ts';
import { unionIntervals } from '../schedule/intervals.ts';
import type { GpuSlice, MeasuredTrace } from './kineto-types.ts';
import { rankWindow } from './measured-analysis.ts';

/** One GPU kernel on a rank's compute or comm lane; ms from the window's start. */
export interface MeasuredEvent {
  readonly rank: number;
  readonly stream: 'compute' | 'comm';
  /** A short kernel name for labels ("vectorized_elementwise_kernel", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"). */
  readonly op: string;
  readonly t0: number;
  readonly t1: number;
  /** NCCL kernels: the parts no compute kernel of the rank covers, ms; [] for compute. */
  readonly exposed: readonly Interval[];
  readonly exposedMs: number;
  /** The slice as imported (times on the job clock). */
  readonly slice: GpuSlice;
}

/** Per-rank totals of the window, ms (the timeline's right column). */
export interface MeasuredTotals {
  readonly rank: number;
  readonly computeMs: number;
  readonly commMs: number;
  readonly exposedMs: number;
  readonly endMs: number;
}

/** What the timeline draws of a measured window. */
export interface MeasuredTimeline {
  readonly measured: true;
  /** The ranks drawn, in lane order (a job's files may hold any subset of its ranks). */
  readonly rankIds: readonly number[];
  readonly ranks: number;
  readonly events: readonly MeasuredEvent[];
  readonly totals: readonly MeasuredTotals[];
  /** The window's end: the last kernel end over the ranks, ms from its start. */
  readonly stepMs: number;
  /** The rank whose work ends last (the lowest on ties). */
  readonly slowestRank: number;
  /** Job-clock time of the window's start, ms. */
  readonly originMs: number;
  /** Kernels left out because the window held more than `maxEvents`. */
  readonly omitted: number;
}

/**
 * "void at::native::vectorized_elementwise_kernel<4, …>(int, …)" → "vectorized_elementwise_kernel":
 * the demangled name without return type, namespaces, template arguments and parameters.
 */
export function shortKernelName(name: string): string {
  let depth = 0;
  let base = '';
  for (const ch of name.replace(/^void\s+/, '')) {
    if (ch === '<') depth++;
    else if (ch === '>') depth = Math.max(0, depth - 1);
    else if (ch === '(' && depth === 0) break;
    else if (depth === 0) base += ch;
  }
  const parts = base.trim().split('::');
  return parts[parts.length - 1] || name;
}

/**
 * The timeline of `step` (ProfilerStep#N; undefined = every kernel of the trace). Compute and NCCL
 * kernels only (memcpy/memset are neither); exposed parts as `exposedComm` defines them. At most
 * `maxEvents` kernels are drawn, the earliest first (the rest counted in `omitted`).
 */
export function measuredTimeline(trace: MeasuredTrace, step?: number, maxEvents = 20_000): MeasuredTimeline {
  const per = trace.ranks.map((r) => ({
    rank: r.rank,
    slices: r.slices.filter(
      (s) => (s.work === 'compute' || s.work === 'comm') && (step === undefined || s.step === step),
    ),
  }));
  const all = per.flatMap((p) => p.slices);
  const originMs = all.reduce((m, s) => Math.min(m, s.t0), Infinity);
  const origin = Number.isFinite(originMs) ? originMs : 0;
  const total = all.length;
  const cutoff = total > maxEvents ? [...all].sort((a, b) => a.t0 - b.t0)[maxEvents - 1]!.t0 : Infinity;
  let kept = 0;
  const events: MeasuredEvent[] = [];
  const totals: MeasuredTotals[] = per.map(({ rank, slices }) => {
    const w = rankWindow(rank, slices);
    const compute = unionIntervals(slices.filter((s) => s.work === 'compute'));
    for (const s of slices) {
      if (s.t0 > cutoff || kept >= maxEvents) continue;
      kept++;
      const parts = s.work === 'comm' ? exposedParts(s, compute) : [];
      const exposed = parts.map((x) => ({ t0: x.t0 - origin, t1: x.t1 - origin }));
      events.push({
        rank,
        stream: s.work as 'compute' | 'comm',
        op: shortKernelName(s.name),
        t0: s.t0 - origin,
        t1: s.t1 - origin,
        exposed,
        exposedMs: exposed.reduce((a, x) => a + (x.t1 - x.t0), 0),
        slice: s,
      });
    }
    return {
      rank,
      computeMs: w.computeMs,
      commMs: w.commMs,
      exposedMs: w.exposedMs,
      endMs: slices.length ? w.t1 - origin : 0,
    };
  });
  const stepMs = Math.max(0, ...totals.map((t) => t.endMs));
  const last = totals.find((t) => t.endMs === stepMs);
  return {
    measured: true,
    rankIds: per.map((p) => p.rank),
    ranks: per.length,
    events,
    totals,
    stepMs,
    slowestRank: last?.rank ?? 0,
    originMs: origin,
    omitted: total - kept,
  };
}
