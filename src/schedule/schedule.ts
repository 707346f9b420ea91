import { formatShape } from '../core/shape.ts';
import type {
  KernelName,
  LayerPlan,
  OpPhase,
  OpRole,
  OpSplit,
  PlannedCollective,
  PlannedGemm,
  PlannedOp,
} from '../parallel/plan-types.ts';
import type { WeightName } from '../parallel/weight-names.ts';
import type { TraceEvent, TracePhase } from '../core/trace-event.ts';
import { exposedParts } from './exposed.ts';
import { lastEntrant } from './stragglers.ts';
import { subtractIntervals, totalLength, unionIntervals, type Interval } from './intervals.ts';

/** Durations of one step, indexed [rank][opIndex], in ms. */
export interface StepDurations {
  /** Each compute op's time on that rank, timed with the other ranks idle; collective entries are ignored. */
  readonly computeMs: readonly (readonly number[])[];
  /** Each collective's transfer time (no waiting for the group) on that rank; compute entries are ignored. */
  readonly commMs: readonly (readonly number[])[];
}

/** How the step is scheduled. */
export interface ScheduleOptions {
  /**
   * Megatron's asynchronous dgrad all-reduce (ColumnParallelLinear's allreduce_dgrad, on whenever t > 1
   * without SP: tensor_parallel/layers.py:1066 at core_v0.19.0; the old async_tensor_model_parallel_allreduce flag is gone):
   * a collective whose plan op has `overlap.async` runs while the compute ops right after (or right
   * before) it with `overlap.underAsync` (weight gradients) run; the first op after those waits for it.
   */
  readonly overlap: boolean;
}

/** An event's binding dependency: the event (rank, op index) whose end is this event's start. */
export interface EventRef {
  readonly rank: number;
  readonly opIndex: number;
}

/** One op on one rank's timeline; `op` is the plan's op name ("qkv.q"), t0/t1 in ms from the step's start. */
export interface ScheduledEvent extends TraceEvent {
  readonly opIndex: number;
  readonly kind: PlannedOp['kind'];
  /** Forward, backward or finalize (TraceEvent.phases are the event's sub-intervals, e.g. wait/transfer). */
  readonly phase: OpPhase;
  /** What the op is, from the plan (see PlannedOp). */
  readonly role: OpRole;
  readonly split: OpSplit;
  readonly weight?: WeightName;
  readonly megatron: string;
  /** The kernel that ran a compute op (a GEMM's is `gemm`); absent for collectives. */
  readonly kernel?: KernelName | 'gemm';
  readonly inShapes: readonly (readonly number[])[];
  readonly outShape: readonly number[];
  /** Local shapes for labels: "[32, 768]·[768, 192] → [32, 192]". */
  readonly shapeLabel: string;
  readonly gemm?: PlannedGemm;
  readonly collective?: PlannedCollective;
  /** Collectives: ms between this rank's arrival (t0) and the last rank's arrival; 0 for compute. */
  readonly waitMs: number;
  /** Collectives: the rank that arrived last (whose arrival started the transfer). */
  readonly lastArrival?: number;
  /** Collectives run asynchronously under the overlap option. */
  readonly overlapped: boolean;
  /** What set t0 (for a collective: this rank's arrival); null when t0 = 0 with nothing before. */
  readonly after: EventRef | null;
  /** Collectives: the parts of [t0, t1) not covered by this rank's compute, ms; [] for compute. */
  readonly exposed: readonly Interval[];
  readonly exposedMs: number;
}

/** One rank's totals over the step, ms. idle = step time − |union(compute ∪ comm)| (waiting for the slowest rank counts). */
export interface RankTotals {
  readonly rank: number;
  readonly computeMs: number;
  readonly commMs: number;
  readonly exposedMs: number;
  readonly idleMs: number;
  /** When this rank's last event ends, ms. */
  readonly endMs: number;
}

/** The scheduled step: every rank's events (by rank, then op index), totals, and step time (slowest rank's end), ms. */
export interface Timeline {
  readonly ranks: number;
  readonly overlap: boolean;
  readonly events: readonly ScheduledEvent[];
  readonly totals: readonly RankTotals[];
  readonly stepMs: number;
  /** The lowest rank whose last event ends at stepMs. */
  readonly slowestRank: number;
}

/** True for the collectives the overlap option makes asynchronous (the plan's overlap.async: Megatron's async dgrad all-reduce). */
export const isAsyncCollective = (op: PlannedOp): boolean => op.kind === 'collective' && op.overlap.async;
/** True for the compute ops that may run under an asynchronous collective (the plan's overlap.underAsync: weight gradients). */
export const runsUnderAsync = (op: PlannedOp): boolean => op.kind !== 'collective' && op.overlap.underAsync;

/** "[a]·[b] → [c]" from an op's local shapes. */
export function shapeLabel(op: Pick<PlannedOp, 'inShapes' | 'outShape'>): string {
  return `${op.inShapes.map(formatShape).join('·')} → ${formatShape(op.outShape)}`;
}

function checkDurations(plan: LayerPlan, d: StepDurations): void {
  const t = plan.ranks.length;
  for (const [what, m] of [
    ['computeMs', d.computeMs],
    ['commMs', d.commMs],
  ] as const) {
    if (m.length !== t) throw new Error(`scheduleStep: ${what} has ${m.length} ranks, the plan has ${t}.`);
    m.forEach((row, r) => {
      if (row.length !== plan.ops.length)
        throw new Error(`scheduleStep: ${what}[${r}] has ${row.length} ops, the plan has ${plan.ops.length}.`);
      plan.ops.forEach((op, i) => {
        const relevant = (what === 'commMs') === (op.kind === 'collective');
        const v = row[i] ?? NaN;
        if (relevant && !(Number.isFinite(v) && v >= 0))
          throw new Error(`scheduleStep: ${what}[${r}][${i}] (${op.name}) is ${v}; durations must be finite ms ≥ 0.`);
      });
    });
  }
}

interface Cursor {
  /** When the next op in program order may start, and what set it. */
  ready: number;
  readyBy: EventRef | null;
  commFree: number;
  commBy: EventRef | null;
  pending: { end: number; by: EventRef } | null;
  /** `ready` before the current run of underAsync ops began; null outside such a run. */
  beforeWgrad: { t: number; by: EventRef | null } | null;
}

/** Where and when one op ran on one rank; the event is built from it once the rank's compute is known (finish). */
interface Draft {
  readonly op: PlannedOp;
  readonly rank: number;
  readonly t0: number;
  readonly t1: number;
  readonly phases: readonly TracePhase[];
  readonly waitMs: number;
  /** Collectives only. */
  readonly lastArrival: number | undefined;
  readonly overlapped: boolean;
  readonly after: EventRef | null;
}

/**
 * The event of draft `d`, its fields in one fixed order (optional ones only where the op has
 * them): one construction per event, no intermediate copies.
 */
function eventOf(d: Draft, exposed: readonly Interval[], exposedMs: number): ScheduledEvent {
  const { op } = d;
  const c = op.kind === 'collective' ? op.collective : undefined;
  const e: Record<string, unknown> = {
    rank: d.rank,
    stream: c ? 'comm' : 'compute',
    op: op.name,
    shape: op.inShapes[0] ?? [],
    bytes: c ? c.payloadBytes : 0,
    t0: d.t0,
    t1: d.t1,
    phases: d.phases,
    flops: op.flops,
    opIndex: op.index,
    kind: op.kind,
    phase: op.phase,
    role: op.role,
    split: op.split,
  };
  if (op.weight !== undefined) e.weight = op.weight;
  e.megatron = op.megatron;
  if (op.kind !== 'collective') e.kernel = op.kind === 'gemm' ? 'gemm' : op.kernel;
  e.inShapes = op.inShapes;
  e.outShape = op.outShape;
  e.shapeLabel = shapeLabel(op);
  if (op.kind === 'gemm') e.gemm = op.gemm;
  if (c) e.collective = c;
  e.waitMs = d.waitMs;
  if (d.lastArrival !== undefined) e.lastArrival = d.lastArrival;
  e.overlapped = d.overlapped;
  e.after = d.after;
  e.exposed = exposed;
  e.exposedMs = exposedMs;
  return e as unknown as ScheduledEvent;
}

/** max with its source; ties keep `a` (the more recent op in program order is passed as `a`). */
function later(
  a: { t: number; by: EventRef | null },
  b: { t: number; by: EventRef | null },
): { t: number; by: EventRef | null } {
  return b.t > a.t ? b : a;
}

/**
 * Schedules one step of `plan` on every rank. Semantics (all times ms, every rank starts at 0):
 * - compute ops run back to back on the rank's compute stream in plan order;
 * - a collective arrives on rank r when the op before it has ended and r's comm stream is free
 *   (arrival_r); like NCCL it completes only when the whole group has arrived, and the ring moves
 *   at its slowest member's pace: start = max_r arrival_r, end_r = start + max_r commMs[r][i] on
 *   every rank. The event spans [arrival_r, end) with phases `wait` [arrival_r, start) and
 *   `transfer` [start, end);
 * - without overlap the next op starts at the collective's end; with overlap an async collective
 *   (op.overlap.async: the dgrad all-reduce or reduce-scatter, and under SP the re-gather of a
 *   ColumnParallelLinear's input) does not hold the compute stream: the underAsync ops right after
 *   it (weight gradients; the dgrad GEMMs after a re-gather) run at once, and the first op after
 *   them starts at max(their end, the collective's end). The wgrad GEMMs do not depend on the
 *   reduce, so a run of weight gradients listed right before it overlaps it the same way: it
 *   arrives when the op before that run ends.
 * Per collective, `exposed` = [t0, t1) − union(this rank's compute) (DESIGN.md's definition).
 */
export function scheduleStep(plan: LayerPlan, durations: StepDurations, opts: ScheduleOptions): Timeline {
  checkDurations(plan, durations);
  const t = plan.ranks.length;
  const cur: Cursor[] = Array.from({ length: t }, () => ({
    ready: 0,
    readyBy: null,
    commFree: 0,
    commBy: null,
    pending: null,
    beforeWgrad: null,
  }));
  const drafts: Draft[][] = Array.from({ length: t }, () => []);
  // Each op's end per rank (chunked ops wait for named ops, not only for their stream's order).
  const ends: Map<number, number>[] = Array.from({ length: t }, () => new Map());
  const endOf = (r: number, i: number): { t: number; by: EventRef } => ({
    t: ends[r]!.get(i) ?? 0,
    by: { rank: r, opIndex: i },
  });
  for (const op of plan.ops) {
    const ref = (rank: number): EventRef => ({ rank, opIndex: op.index });
    if (!runsUnderAsync(op)) {
      for (const c of cur) {
        if (!c.pending) continue;
        ({ t: c.ready, by: c.readyBy } = later({ t: c.ready, by: c.readyBy }, { t: c.pending.end, by: c.pending.by }));
        c.pending = null;
      }
    }
    if (op.kind !== 'collective') {
      cur.forEach((c, r) => {
        // Only weight gradients may run before an async collective is issued: dgrad GEMMs under a
        // re-gather produce what the next collective (the dgrad reduce) moves.
        c.beforeWgrad =
          runsUnderAsync(op) && op.role === 'wgrad' ? (c.beforeWgrad ?? { t: c.ready, by: c.readyBy }) : null;
        // A chunked compute op also waits for the chunked collectives whose results it reads.
        const start = (op.after ?? []).reduce((a, i) => later(a, endOf(r, i)), { t: c.ready, by: c.readyBy });
        const t0 = start.t;
        const t1 = t0 + (durations.computeMs[r]?.[op.index] ?? 0);
        drafts[r]!.push({
          op,
          rank: r,
          t0,
          t1,
          phases: [],
          waitMs: 0,
          lastArrival: undefined,
          overlapped: false,
          after: start.by,
        });
        ends[r]!.set(op.index, t1);
        c.ready = t1;
        c.readyBy = ref(r);
      });
      continue;
    }
    const overlapped = opts.overlap && isAsyncCollective(op);
    // A chunk of a chunked collective (tp-overlap.ts) arrives once the op that wrote its input has
    // ended and the comm stream is free, and does not hold the compute stream: the GEMM chunks
    // queued after it run under it, and only the ops that read its result wait for it.
    const chunked = op.chunk !== undefined;
    const producer = chunked && op.after?.length ? op.after[0] : undefined;
    const arrivals = cur.map((c, r) =>
      later(
        producer !== undefined ? endOf(r, producer) : (overlapped && c.beforeWgrad) || { t: c.ready, by: c.readyBy },
        { t: c.commFree, by: c.commBy },
      ),
    );
    const last = lastEntrant(arrivals.map((a) => a.t));
    const start = arrivals[last]!.t;
    const end = start + Math.max(...durations.commMs.map((row) => row[op.index] ?? 0));
    cur.forEach((c, r) => {
      const arrival = arrivals[r]!;
      const phases: TracePhase[] = [
        ...(start > arrival.t ? [{ name: 'wait', t0: arrival.t, t1: start }] : []),
        { name: 'transfer', t0: start, t1: end },
      ];
      drafts[r]!.push({
        op,
        rank: r,
        t0: arrival.t,
        t1: end,
        phases,
        waitMs: start - arrival.t,
        lastArrival: last,
        overlapped,
        after: arrival.by,
      });
      c.commFree = end;
      c.commBy = ref(r);
      ends[r]!.set(op.index, end);
      if (chunked) return;
      c.beforeWgrad = null;
      if (overlapped) c.pending = { end, by: ref(r) };
      else {
        c.ready = end;
        c.readyBy = ref(r);
      }
    });
  }
  return finish(plan, opts, drafts);
}

function finish(plan: LayerPlan, opts: ScheduleOptions, drafts: Draft[][]): Timeline {
  const ends = drafts.map((d) => Math.max(0, ...d.map((e) => e.t1)));
  const stepMs = Math.max(0, ...ends);
  const events: ScheduledEvent[] = [];
  const totals: RankTotals[] = drafts.map((d, rank) => {
    const compute = unionIntervals(d.filter((e) => e.op.kind !== 'collective'));
    const comm = unionIntervals(d.filter((e) => e.op.kind === 'collective'));
    for (const e of d) {
      const exposed = e.op.kind === 'collective' ? exposedParts(e, compute) : [];
      events.push(eventOf(e, exposed, totalLength(exposed)));
    }
    const busy = totalLength(unionIntervals([...compute, ...comm]));
    return {
      rank,
      computeMs: totalLength(compute),
      commMs: totalLength(comm),
      exposedMs: totalLength(subtractIntervals(comm, compute)),
      idleMs: stepMs - busy,
      endMs: ends[rank]!,
    };
  });
  return {
    ranks: plan.ranks.length,
    overlap: opts.overlap,
    events,
    totals,
    stepMs,
    slowestRank: Math.max(0, ends.indexOf(stepMs)),
  };
}
