import { collectiveTimeUs, type Interconnect } from '../hardware/interconnect.ts';
import type { LayerPlan, PlannedCollectiveOp } from '../parallel/plan-types.ts';
import type { TraceEvent } from '../core/trace-event.ts';
import type { RankSlowdown } from '../core/rank-slowdown.ts';
import type { StepDurations } from './schedule.ts';

/**
 * Modeled collective times, [rank][opIndex] in ms: collectiveTimeUs(op, payloadBytes, groupSize, link)/1000
 * at each collective (the alpha-beta ring of DESIGN.md), 0 at compute ops; the same on every rank.
 */
export function modeledCommMs(plan: LayerPlan, link: Interconnect): number[][] {
  const row = plan.ops.map((op) =>
    op.kind === 'collective'
      ? collectiveTimeUs(op.collective.op, op.collective.payloadBytes, op.collective.groupSize, link) / 1000
      : 0,
  );
  return plan.ranks.map(() => [...row]);
}

/**
 * Measured collective transfer times, [rank][opIndex] in ms, from one step's comm events of a real
 * run (shared clock). The plan's k-th collective is each rank's k-th comm event by `comm.seq`
 * (t0 order without one). A rank's measured span includes waiting for the others, so the transfer
 * time is taken from the last arrival: max_r t1 − max_r t0, the same on every rank.
 * Throws when a rank's events do not match the plan's collectives in count or op.
 */
export function measuredCommMs(plan: LayerPlan, events: readonly TraceEvent[]): number[][] {
  const colls = plan.ops.filter((op): op is PlannedCollectiveOp => op.kind === 'collective');
  const perRank = plan.ranks.map(({ rank }) => {
    const mine = events
      .filter((e) => e.rank === rank && e.stream === 'comm')
      .sort((a, b) => (a.comm?.seq ?? 0) - (b.comm?.seq ?? 0) || a.t0 - b.t0);
    if (mine.length !== colls.length)
      throw new Error(
        `measuredCommMs: rank ${rank} has ${mine.length} comm events, the plan has ${colls.length} collectives.`,
      );
    mine.forEach((e, k) => {
      const want = colls[k]!.collective.op;
      if (e.op !== want)
        throw new Error(
          `measuredCommMs: rank ${rank}'s comm event ${k} is ${e.op}, the plan's collective ${k} (${colls[k]!.name}) is ${want}.`,
        );
    });
    return mine;
  });
  const row = plan.ops.map(() => 0);
  colls.forEach((op, k) => {
    const calls = perRank.map((evs) => evs[k]!);
    row[op.index] = Math.max(0, Math.max(...calls.map((e) => e.t1)) - Math.max(...calls.map((e) => e.t0)));
  });
  return plan.ranks.map(() => [...row]);
}

/** The same compute time (ms) for every rank, [rank][opIndex]; `ms(op index)` gives it, collectives get 0. */
export function sameComputeMs(plan: LayerPlan, ms: (opIndex: number) => number): number[][] {
  const row = plan.ops.map((op) => (op.kind === 'collective' ? 0 : ms(op.index)));
  return plan.ranks.map(() => [...row]);
}

/**
 * `d` with every collective f× longer on every rank (a modeled #slowlink=r:f: a ring moves at its
 * slowest hop's pace, and each of the t − 1 steps of every ring phase crosses the hop out of rank r);
 * null or factor 1 returns `d`.
 */
export function withSlowLink<D extends StepDurations>(d: D, slowlink: RankSlowdown | null | undefined): D {
  if (!slowlink || slowlink.factor === 1) return d;
  return { ...d, commMs: d.commMs.map((row) => row.map((ms) => ms * slowlink.factor)) };
}

/**
 * `d` with rank `slow.rank`'s compute times multiplied by `slow.factor` (a modeled straggler: the
 * projected or modeled step of #slow=r:f; the ranks in this browser do the f× work for real).
 * Collective times are unchanged; null or factor 1 returns `d`.
 */
export function withSlowRank<D extends StepDurations>(d: D, slow: RankSlowdown | null | undefined): D {
  if (!slow || slow.factor === 1) return d;
  if (slow.rank >= d.computeMs.length)
    throw new Error(`withSlowRank: rank ${slow.rank} is slowed but the step has ranks 0–${d.computeMs.length - 1}.`);
  return { ...d, computeMs: d.computeMs.map((row, r) => (r === slow.rank ? row.map((ms) => ms * slow.factor) : row)) };
}
