// Kernels under a ring transfer: which compute ops of a scheduled step run while a collective of
// their rank moves data, and what the transfer cost them (their time measured with the ring moving
// against the same kernel with nothing moving). Pure: no DOM, no GPU.
import type { LayerPlan } from '../parallel/plan-types.ts';
import { median } from '../core/stats.ts';
import { scheduleStep, type ScheduleOptions, type ScheduledEvent, type Timeline } from './schedule.ts';

/** One compute op's kernel time with nothing moving and while the ring moved data, ms. */
export interface KernelTransferTime {
  readonly aloneMs: number;
  readonly overlappedMs: number;
}

/**
 * Per-op kernel times of the same step run both ways, [rank][opIndex] in ms (collective entries
 * ignored): `aloneMs` with collectives that move nothing, `overlappedMs` with the real ring, every
 * rank running at once in both, alternated `pairs` times (each op's shortest time of each way kept).
 */
export interface TransferTimes {
  readonly pairs: number;
  readonly aloneMs: readonly (readonly number[])[];
  readonly overlappedMs: readonly (readonly number[])[];
  /** The step's wall time (slowest rank), shortest over the pairs, each way, ms. */
  readonly stepWallMs: KernelTransferTime;
}

/**
 * `times` with each op's median over the ranks on every rank, both ways: every rank runs the same
 * ops on the same local shapes, so the ranks' differences are this shared machine's noise (as
 * run-timeline.ts computeMsByOp does for the kernels timed alone); a schedule from the raw rows
 * would name noise a straggler.
 */
export function medianOverRanks(times: TransferTimes): TransferTimes {
  const med = (m: readonly (readonly number[])[]): number[][] => {
    const row = (m[0] ?? []).map((_, i) => median(m.map((r) => r[i] ?? 0)));
    return m.map(() => [...row]);
  };
  return { ...times, aloneMs: med(times.aloneMs), overlappedMs: med(times.overlappedMs) };
}

/** Overlap of [a0, a1) and [b0, b1), ms (0 when they do not meet). */
const meet = (a0: number, a1: number, b0: number, b1: number): number =>
  Math.max(0, Math.min(a1, b1) - Math.max(a0, b0));

/**
 * [rank][opIndex]: true for the compute ops that run, on the timeline, while a collective of their
 * rank is transferring (its `transfer` phase, not its wait for the group) — the kernels that share
 * this machine's cores with a ring transfer. Collectives are false.
 */
export function underTransfer(tl: Timeline): boolean[][] {
  const out = Array.from({ length: tl.ranks }, () => [] as boolean[]);
  const transfers = tl.events
    .filter((e) => e.stream === 'comm')
    .flatMap((e) => e.phases.filter((p) => p.name === 'transfer').map((p) => ({ rank: e.rank, t0: p.t0, t1: p.t1 })));
  for (const e of tl.events)
    out[e.rank]![e.opIndex] =
      e.stream === 'compute' && transfers.some((x) => x.rank === e.rank && meet(e.t0, e.t1, x.t0, x.t1) > 0);
  return out;
}

/** A compute event of a step scheduled with kernels under transfer: `transfer` is set on those that ran under one. */
export type TransferEvent = ScheduledEvent & { readonly transfer?: KernelTransferTime };

/** A timeline whose compute events under a transfer carry both of their times. */
export interface TransferTimeline extends Timeline {
  readonly events: readonly TransferEvent[];
}

/**
 * Schedules the step with each kernel's time alone, finds the kernels that then run under a
 * transfer (underTransfer), and schedules it again with those kernels taking their time measured
 * under transfer; they carry both times (`transfer`), so a view can draw the alone part and the
 * extra. A kernel faster under transfer than alone (noise) keeps its measured time, with no extra.
 */
export function scheduleUnderTransfer(
  plan: LayerPlan,
  times: TransferTimes,
  commMs: readonly (readonly number[])[],
  opts: ScheduleOptions,
): TransferTimeline {
  const alone = scheduleStep(plan, { computeMs: times.aloneMs, commMs }, opts);
  const under = underTransfer(alone);
  const computeMs = times.aloneMs.map((row, r) =>
    row.map((ms, i) => (under[r]![i] ? (times.overlappedMs[r]?.[i] ?? ms) : ms)),
  );
  const tl = scheduleStep(plan, { computeMs, commMs }, opts);
  return {
    ...tl,
    events: tl.events.map((e) =>
      under[e.rank]![e.opIndex]
        ? {
            ...e,
            transfer: {
              aloneMs: times.aloneMs[e.rank]![e.opIndex]!,
              overlappedMs: times.overlappedMs[e.rank]![e.opIndex]!,
            },
          }
        : e,
    ),
  };
}

/** overlappedMs / aloneMs (1 when alone is 0). */
export const transferSlowdown = (t: KernelTransferTime): number => (t.aloneMs > 0 ? t.overlappedMs / t.aloneMs : 1);

/** The part of a slowed kernel's block that the transfer added: [t1 − extra, t1), or null with no extra. */
export function slowedPart(e: TransferEvent): { t0: number; t1: number } | null {
  if (!e.transfer || e.transfer.overlappedMs <= e.transfer.aloneMs) return null;
  return { t0: e.t1 - (e.transfer.overlappedMs - e.transfer.aloneMs), t1: e.t1 };
}

/** One compute op on one rank as the sweep reports it: both times, the ratio, and whether it ran under a transfer. */
export interface KernelSlowdown extends KernelTransferTime {
  readonly rank: number;
  readonly opIndex: number;
  readonly op: string;
  readonly underTransfer: boolean;
  readonly slowdown: number;
}

/** Every compute op of every rank with both times, whether it ran under a transfer in `tl`, and its slowdown. */
export function kernelSlowdowns(plan: LayerPlan, times: TransferTimes, tl: TransferTimeline): KernelSlowdown[] {
  const under = new Set(tl.events.filter((e) => e.transfer).map((e) => `${e.rank}:${e.opIndex}`));
  return times.aloneMs.flatMap((row, rank) =>
    plan.ops
      .filter((op) => op.kind !== 'collective')
      .map((op) => {
        const t = { aloneMs: row[op.index]!, overlappedMs: times.overlappedMs[rank]![op.index]! };
        return {
          rank,
          opIndex: op.index,
          op: op.name,
          ...t,
          underTransfer: under.has(`${rank}:${op.index}`),
          slowdown: transferSlowdown(t),
        };
      }),
  );
}

/**
 * Σ overlapped / Σ alone over the kernels under a transfer and over the others (the control: what
 * running the two ways changes without a transfer in flight); NaN for an empty group.
 */
export function slowdownByGroup(rows: readonly KernelSlowdown[]): { underTransfer: number; others: number } {
  const ratio = (xs: readonly KernelSlowdown[]): number =>
    xs.reduce((s, x) => s + x.overlappedMs, 0) / xs.reduce((s, x) => s + x.aloneMs, 0);
  return {
    underTransfer: ratio(rows.filter((r) => r.underTransfer)),
    others: ratio(rows.filter((r) => !r.underTransfer)),
  };
}
