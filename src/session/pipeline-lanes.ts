/**
 * A pipeline step as lanes to draw (pure): one row per (replica, stage), or per TP rank of a stage
 * the reader opened, each with its passes, its data-parallel syncs and its TP collectives, and the
 * p2p messages between rows. The projected step (the projection's simulation) and the step the
 * ranks ran (session/pipeline-run.ts) both become this, so one element draws either.
 */
import type { TraceEvent } from '../core/trace-event.ts';
import type { MeshCoords } from '../mesh/rank-layout.ts';
import type { PassSpan } from '../parallel/pipeline-step.ts';
import type { PipelineRun } from '../projection/pipeline/pipeline-schedule.ts';
import type { StageClassBytes } from '../mesh/pipeline-memory.ts';

/** A block's pass: forward, backward (with no weight pass in the schedule, the whole backward), or ZB-H1's deferred weight gradients. */
export type ChartPass = 'forward' | 'backward' | 'weight';

/** One block of a row: one pass of one micro-batch through one model chunk, ms from the step's start. */
export interface ChartBlock {
  readonly chunk: number;
  readonly microBatch: number;
  readonly pass: ChartPass;
  readonly t0: number;
  readonly t1: number;
}

/** An interval of a row, ms from the step's start. */
export interface ChartSpan {
  readonly t0: number;
  readonly t1: number;
}

/** One lane: stage `stage` of replica `replica` (a TP rank's own lane when `tpRank` is set). */
export interface ChartRow {
  readonly stage: number;
  readonly replica: number;
  /** Set on the lanes of an opened stage: the TP rank within its group. */
  readonly tpRank?: number;
  readonly blocks: readonly ChartBlock[];
  /** The replica's gradient syncs over its DP group (all-reduce, or reduce-scatter + all-gather). */
  readonly syncs: readonly ChartSpan[];
  /** The lane's TP collectives (drawn on an opened stage's lanes). */
  readonly comm: readonly ChartSpan[];
}

/** A p2p message between two rows: from its send's start on `from` to its arrival on `to`, ms. */
export interface ChartArrow {
  readonly from: ChartRow;
  readonly to: ChartRow;
  readonly t0: number;
  readonly t1: number;
}

/** A pipeline step to draw: p stages × v chunks, its rows (replica-major, then stage), its p2p arrows. */
export interface PipelineChartData {
  readonly p: number;
  readonly v: number;
  readonly rows: readonly ChartRow[];
  readonly arrows: readonly ChartArrow[];
  readonly spanMs: number;
}

/** The idle gaps of one row's busy intervals (sorted by start) inside [0, span]: the bubble that stage sees. */
export function idleGaps(busy: readonly ChartSpan[], spanMs: number): ChartSpan[] {
  const out: ChartSpan[] = [];
  let t = 0;
  for (const o of busy) {
    if (o.t0 > t) out.push({ t0: t, t1: o.t0 });
    t = Math.max(t, o.t1);
  }
  if (spanMs > t) out.push({ t0: t, t1: spanMs });
  return out;
}

/**
 * The p2p dependencies of the rows, within each replica: a forward of virtual stage k = c·p + i
 * takes its input from the forward of k − 1 of the same micro-batch, a backward from the backward
 * of k + 1 (the last virtual stage's backward follows its own forward, on the same stage: no edge;
 * a weight pass takes nothing from a neighbour). Each arrow runs from the producer's end to the
 * consumer's start.
 */
export function dependencyArrows(p: number, v: number, rows: readonly ChartRow[]): ChartArrow[] {
  const key = (replica: number, pass: ChartPass, k: number, mb: number): string => `${replica}:${pass}:${k}:${mb}`;
  const byKey = new Map<string, { row: ChartRow; block: ChartBlock }>();
  for (const row of rows)
    for (const block of row.blocks)
      byKey.set(key(row.replica, block.pass, block.chunk * p + row.stage, block.microBatch), { row, block });
  const out: ChartArrow[] = [];
  for (const row of rows)
    for (const block of row.blocks) {
      if (block.pass === 'weight') continue;
      const k = block.chunk * p + row.stage;
      const src = block.pass === 'forward' ? k - 1 : k + 1;
      if (src < 0 || src > p * v - 1) continue;
      const from = byKey.get(key(row.replica, block.pass, src, block.microBatch));
      if (from) out.push({ from: from.row, to: row, t0: from.block.t1, t1: block.t0 });
    }
  return out;
}

/** The projection's simulated step as lanes (one replica: the simulation runs one). */
export function projectedChart(run: PipelineRun): PipelineChartData {
  const rows: ChartRow[] = run.ops.map((ops, stage) => ({ stage, replica: 0, blocks: ops, syncs: [], comm: [] }));
  return { p: run.p, v: run.v, rows, arrows: dependencyArrows(run.p, run.v, rows), spanMs: run.spanMs };
}

const passOf: Record<PassSpan['pass'], ChartPass> = { F: 'forward', B: 'backward', W: 'weight' };

/** What the lanes of a measured step are read from (session/pipeline-run.ts PipelineRunResult's fields). */
export interface MeasuredPipeline {
  readonly p: number;
  readonly v: number;
  /** Per global rank: its mesh coordinates. */
  readonly places: readonly MeshCoords[];
  /** Per global rank: its passes' spans on the shared clock (ms). */
  readonly spans: readonly (readonly PassSpan[])[];
  /** The ranks' trace of the step: p2p messages (TraceEvent.p2p), DP syncs (dpSync), TP collectives. */
  readonly trace: readonly TraceEvent[];
}

/**
 * The step the ranks ran as lanes: one per (replica, stage), drawn from the stage's TP rank 0 (its
 * TP ranks run the same passes at the same times, up to their collectives' skew), except the stage
 * `open`, whose TP ranks each get their own lane with their TP collectives. Times are ms from the
 * first pass's start; arrows pair each p2p send with its receive (from the send's post to the
 * arrival), between the lanes of the ranks that sent and received it.
 */
export function measuredChart(run: MeasuredPipeline, open?: number): PipelineChartData {
  const all = run.spans.flat();
  const origin = all.length ? Math.min(...all.map((s) => s.t0)) : 0;
  const shift = <T extends ChartSpan>(x: T): T => ({ ...x, t0: x.t0 - origin, t1: x.t1 - origin });
  const rowOf = new Map<number, ChartRow>();
  const rows: ChartRow[] = [];
  const replicas = Math.max(0, ...run.places.map((c) => c.dp)) + 1;
  for (let d = 0; d < replicas; d++)
    for (let stage = 0; stage < run.p; stage++) {
      const ranks = run.places.flatMap((c, r) => (c.dp === d && c.pp === stage ? [r] : []));
      const lanes = stage === open ? ranks : ranks.filter((r) => run.places[r]!.tp === 0);
      for (const r of lanes) {
        const own = run.trace.filter((e) => e.rank === r);
        const row: ChartRow = {
          stage,
          replica: d,
          ...(stage === open && { tpRank: run.places[r]!.tp }),
          blocks: (run.spans[r] ?? []).map((s) =>
            shift({ chunk: s.chunk, microBatch: s.microBatch, pass: passOf[s.pass], t0: s.t0, t1: s.t1 }),
          ),
          syncs: own.filter((e) => e.dpSync).map(shift),
          comm: stage === open ? own.filter((e) => e.stream === 'comm' && !e.p2p && !e.dpSync).map(shift) : [],
        };
        rows.push(row);
        // A collapsed stage's other TP ranks send and receive beside rank 0: their messages land on its lane.
        for (const q of ranks) if (stage === open ? q === r : true) rowOf.set(q, row);
      }
    }
  const sends = run.trace.filter((e) => e.p2p?.kind === 'send');
  const recvs = new Map(
    run.trace.filter((e) => e.p2p?.kind === 'recv').map((e) => [`${e.p2p!.from}>${e.p2p!.to}>${e.p2p!.tensor}`, e]),
  );
  const arrows: ChartArrow[] = [];
  for (const s of sends) {
    const info = s.p2p!;
    const r = recvs.get(`${info.from}>${info.to}>${info.tensor}`);
    const from = rowOf.get(info.from);
    const to = rowOf.get(info.to);
    // A collapsed stage's TP ranks all send (or receive) the message: drawn once, unless an opened lane is one end.
    const own = (rank: number, row: ChartRow) => row.tpRank !== undefined || run.places[rank]!.tp === 0;
    if (!r || !from || !to || (!own(info.from, from) && !own(info.to, to))) continue;
    arrows.push({ from, to, t0: s.t0 - origin, t1: r.t1 - origin });
  }
  const ends = [...rows.flatMap((r) => [...r.blocks, ...r.syncs]), ...arrows];
  return { p: run.p, v: run.v, rows, arrows, spanMs: Math.max(0, ...ends.map((x) => x.t1)) };
}

/** One stage's live GPU bytes over the step (its TP rank 0 of replica `replica`), sampled at each pass's end. */
export interface StageMemoryLane {
  readonly stage: number;
  readonly replica: number;
  /** (ms from the step's first pass, live bytes), in time order. */
  readonly points: readonly { readonly t: number; readonly bytes: number }[];
}

/**
 * The live bytes each stage's rank held at the end of each of its passes (PassSpan.liveBytes: every
 * GPU buffer the rank's backend holds — weights, gradients made so far, the activations kept for
 * the backwards still to come, ZB-H1's inputs kept for the deferred W). Under 1F1B stage i keeps
 * up to min(p − i, m) micro-batches' activations at once, so stage 0's curve climbs highest through
 * the warm-up; lanes without samples are left out.
 */
export function stageMemoryLanes(run: MeasuredPipeline): StageMemoryLane[] {
  const all = run.spans.flat();
  const origin = all.length ? Math.min(...all.map((s) => s.t0)) : 0;
  return run.places.flatMap((c, r) => {
    if (c.tp !== 0) return [];
    const points = (run.spans[r] ?? []).flatMap((s) =>
      s.liveBytes === undefined ? [] : [{ t: s.t1 - origin, bytes: s.liveBytes }],
    );
    return points.length ? [{ stage: c.pp, replica: c.dp, points }] : [];
  });
}

/** One stage's live bytes by class at each pass's end (its TP rank 0 of replica 0), beside the accounting's. */
export interface StageClassLane {
  readonly stage: number;
  /** (ms from the step's first pass, the pass, measured and accounted bytes per class), in time order. */
  readonly points: readonly {
    readonly t: number;
    readonly pass: string;
    readonly measured: StageClassBytes;
    readonly accounted: StageClassBytes;
  }[];
}

/**
 * Each stage's classes after each pass (session/pipeline-run.ts memoryClasses: the rank's own record
 * and the accounting), placed at the pass's end on the measured clock; stages whose rank recorded no
 * classes are left out.
 */
export function stageClassLanes(
  run: MeasuredPipeline,
  checks: readonly {
    readonly passes: readonly { readonly measured: StageClassBytes; readonly accounted: StageClassBytes }[];
  }[],
): StageClassLane[] {
  const all = run.spans.flat();
  const origin = all.length ? Math.min(...all.map((s) => s.t0)) : 0;
  return run.places.flatMap((c, r) => {
    const spans = run.spans[r] ?? [];
    const passes = checks[r]?.passes ?? [];
    if (c.tp !== 0 || c.dp !== 0 || passes.length !== spans.length || !spans.length) return [];
    const points = spans.map((s, i) => ({
      t: s.t1 - origin,
      pass: `${s.pass}${s.microBatch}${run.v > 1 ? `.${s.chunk}` : ''}`,
      measured: passes[i]!.measured,
      accounted: passes[i]!.accounted,
    }));
    return [{ stage: c.pp, points }];
  });
}
