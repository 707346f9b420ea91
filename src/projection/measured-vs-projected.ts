// The measured step of a real job beside the projection of the configuration it ran.
import type { CollectiveOp } from '../comm/collectives.ts';
import type { StepProjection } from './cluster-projection.ts';
import type { MeasuredAnalysis, RankWindow } from '../kineto/measured-analysis.ts';
import type { NcclCollective } from '../kineto/nccl-kernel.ts';
import type { Timeline } from '../schedule/schedule.ts';

/** One quantity, measured and projected, ms (per GPU, one training step). */
export interface ComparedRow {
  readonly what: 'step' | 'compute' | 'comm' | 'exposed';
  readonly measuredMs: number;
  readonly projectedMs: number;
}

/** Σ time of one collective kind per GPU per step, measured (mean over ranks) and projected. */
export interface ComparedCollective {
  readonly collective: NcclCollective;
  readonly measuredMs: number;
  readonly projectedMs: number;
}

/** The comparison of one measured window with one projected step. */
export interface MeasuredVsProjected {
  /** The measured window: a ProfilerStep number, or undefined for the whole trace. */
  readonly step: number | undefined;
  readonly rows: readonly ComparedRow[];
  readonly collectives: readonly ComparedCollective[];
}

/** Σ over rank 0's events of a projected timeline: compute, and collective time by kind, ms. */
function timelineSums(t: Timeline): { computeMs: number; byOp: Map<CollectiveOp, number> } {
  const byOp = new Map<CollectiveOp, number>();
  let computeMs = 0;
  for (const e of t.events) {
    if (e.rank !== 0) continue;
    if (e.collective) byOp.set(e.collective.op, (byOp.get(e.collective.op) ?? 0) + (e.t1 - e.t0));
    else computeMs += e.t1 - e.t0;
  }
  return { computeMs, byOp };
}

/**
 * Measured (the window's ranks: step = longest GPU span, compute/comm/exposed of the worst rank,
 * per collective the mean over ranks of Σ NCCL kernel time) beside projected (`projectStep`:
 * step, exposed = TP exposed + DP all-reduce + finalize; compute = m·(full + (L−1)·block) compute
 * + optimizer; per collective m·(full + (L−1)·block) + the DP all-reduce and the finalize
 * all-reduces under all-reduce). The projection's ranks are alike, so rank 0 stands for all.
 */
export function compareWithProjection(
  a: MeasuredAnalysis,
  step: number | undefined,
  p: StepProjection,
): MeasuredVsProjected {
  const s = step === undefined ? undefined : a.steps.find((x) => x.step === step);
  const ranks: readonly RankWindow[] = s ? s.ranks : a.ranks;
  const max = (f: (w: RankWindow) => number): number => ranks.reduce((m, w) => Math.max(m, f(w)), 0);
  const L = p.setup.layers;
  const m = p.microBatches;
  const full = timelineSums(p.full);
  const block = timelineSums(p.block);
  const projected = new Map<NcclCollective, number>();
  for (const op of new Set([...full.byOp.keys(), ...block.byOp.keys()]))
    projected.set(op, m * ((full.byOp.get(op) ?? 0) + (L - 1) * (block.byOp.get(op) ?? 0)));
  projected.set('allReduce', (projected.get('allReduce') ?? 0) + p.dpAllReduceMs + p.finalizeMs);
  const measured = new Map<NcclCollective, number>();
  for (const w of ranks)
    for (const c of w.collectives) measured.set(c.collective, (measured.get(c.collective) ?? 0) + c.ms / ranks.length);
  const kinds = [...new Set([...measured.keys(), ...projected.keys()])].filter(
    (k) => (measured.get(k) ?? 0) > 0 || (projected.get(k) ?? 0) > 0,
  );
  const projectedComm = [...projected.values()].reduce((x, y) => x + y, 0);
  return {
    step,
    rows: [
      { what: 'step', measuredMs: s ? s.spanMs : max((w) => w.t1 - w.t0), projectedMs: p.stepMs },
      {
        what: 'compute',
        measuredMs: max((w) => w.computeMs),
        projectedMs: m * (full.computeMs + (L - 1) * block.computeMs) + p.optimizerMs,
      },
      { what: 'comm', measuredMs: max((w) => w.commMs), projectedMs: projectedComm },
      { what: 'exposed', measuredMs: max((w) => w.exposedMs), projectedMs: p.exposedMs },
    ],
    collectives: kinds.map((k) => ({
      collective: k,
      measuredMs: measured.get(k) ?? 0,
      projectedMs: projected.get(k) ?? 0,
    })),
  };
}
