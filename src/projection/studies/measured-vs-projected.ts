// The measured step of a real job beside the projection of the configuration it ran.
import type { CollectiveOp } from '../../comm/collectives.ts';
import type { StepProjection } from '../step/cluster-projection.ts';
import type { MeasuredAnalysis, RankWindow } from '../../kineto/measured-analysis.ts';
import type { NcclCollective } from '../../kineto/nccl-kernel.ts';
import type { GroupDim } from '../../kineto/process-group.ts';
import type { Timeline } from '../../schedule/schedule.ts';

/** One quantity, measured and projected, ms (per GPU, one training step). */
export interface ComparedRow {
  readonly what: 'step' | 'compute' | 'comm' | 'exposed';
  readonly measuredMs: number;
  readonly projectedMs: number;
}

/** Σ time of one collective kind in one kind of group per GPU per step, measured (mean over ranks) and projected. */
export interface ComparedCollective {
  readonly collective: NcclCollective;
  /**
   * The group's parallel dimension: from Megatron-Core's group description in the trace; for a
   * measured collective whose group is not described, the one dimension the projection has that
   * kind in (undefined when it has it in several or none).
   */
  readonly dim: GroupDim | undefined;
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

/** The NCCL collective a planned collective runs as: a ring exchange is one send/recv pair per rank. */
const ncclCollectiveOf: Record<CollectiveOp, NcclCollective> = {
  allReduce: 'allReduce',
  reduceScatter: 'reduceScatter',
  allGather: 'allGather',
  broadcast: 'broadcast',
  barrier: 'barrier',
  ringExchange: 'sendRecv',
  allToAll: 'allToAll',
};

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

/** A collective kind in a group dimension, and its time. */
interface Keyed {
  readonly collective: NcclCollective;
  readonly dim: GroupDim | undefined;
  readonly ms: number;
}

const keyOf = (c: NcclCollective, dim: GroupDim | undefined): string => `${c}\u0000${dim ?? ''}`;

/**
 * Measured (the window's ranks: step = longest GPU span, compute/comm/exposed of the worst rank,
 * per collective kind and group dimension the mean over ranks of Σ NCCL kernel time) beside
 * projected (`projectStep`: step, exposed = TP exposed + DP all-reduce + finalize; compute =
 * m·(full + (L−1)·block) compute + optimizer; per collective and dimension: TP m·(full +
 * (L−1)·block) + the finalize all-reduces, DP the gradient sync past the pipeline and the exposed
 * parameter gather, PP the tied-embedding all-reduce). The projection's ranks are alike, so rank 0
 * stands for all.
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
  // Projected, per (kind, dimension): the layers' collectives and the finalize all-reduces run in
  // the tensor-parallel group; gradient sync (reduce-scatter with the distributed optimizer) and
  // the parameter all-gather in the data-parallel group; the tied-embedding all-reduce between the
  // pipeline's ends.
  const projected = new Map<string, Keyed>();
  const add = (collective: NcclCollective, dim: GroupDim, ms: number): void => {
    if (ms <= 0) return;
    const k = keyOf(collective, dim);
    const x = projected.get(k);
    projected.set(k, { collective, dim, ms: (x?.ms ?? 0) + ms });
  };
  for (const op of new Set([...full.byOp.keys(), ...block.byOp.keys()]))
    add(ncclCollectiveOf[op], 'tp', m * ((full.byOp.get(op) ?? 0) + (L - 1) * (block.byOp.get(op) ?? 0)));
  add('allReduce', 'tp', p.finalizeMs);
  add(p.setup.distributedOptimizer ? 'reduceScatter' : 'allReduce', 'dp', p.dpAllReduceMs);
  add('allGather', 'dp', p.paramGatherMs);
  add('allReduce', 'pp', p.embeddingAllReduceMs);
  const dimsOf = (c: NcclCollective): (GroupDim | undefined)[] =>
    [...projected.values()].filter((x) => x.collective === c).map((x) => x.dim);
  const measured = new Map<string, Keyed>();
  for (const w of ranks)
    for (const c of w.collectives) {
      const only = dimsOf(c.collective);
      const dim = c.dim ?? (only.length === 1 ? only[0] : undefined);
      const k = keyOf(c.collective, dim);
      const x = measured.get(k);
      measured.set(k, { collective: c.collective, dim, ms: (x?.ms ?? 0) + c.ms / ranks.length });
    }
  const keys = [...new Set([...measured.keys(), ...projected.keys()])].filter(
    (k) => (measured.get(k)?.ms ?? 0) > 0 || (projected.get(k)?.ms ?? 0) > 0,
  );
  const projectedComm = [...projected.values()].reduce((x, y) => x + y.ms, 0);
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
    collectives: keys.map((k) => {
      const x = (measured.get(k) ?? projected.get(k))!;
      return {
        collective: x.collective,
        dim: x.dim,
        measuredMs: measured.get(k)?.ms ?? 0,
        projectedMs: projected.get(k)?.ms ?? 0,
      };
    }),
  };
}
