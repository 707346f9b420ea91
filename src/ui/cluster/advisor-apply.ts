import type { ParallelLayout } from '../../megatron/parallel-layout.ts';
import { legalTpOverlapChunks, tpOverlapProblem } from '../../parallel/tp-overlap.ts';
import type { Settings } from '../settings/state.ts';

/** What applying an advisor row does to the page: the new settings and each flag of the row the page cannot set, with why. */
export interface AdvisorApply {
  readonly settings: Settings;
  readonly notApplied: readonly string[];
}

/**
 * The page's chunk count if legal at degree t with SP, else t (one chunk per rank's shard: the ring
 * exchange's own split) when legal, or undefined (t does not divide s).
 */
function chunksFor(s: Settings, tp: number): number | undefined {
  const on = { s: s.s, tp, sp: true };
  if (s.tpOverlapChunks > 1 && !tpOverlapProblem({ ...on, tpOverlapChunks: s.tpOverlapChunks }))
    return s.tpOverlapChunks;
  return legalTpOverlapChunks(on).includes(tp) ? tp : undefined;
}

/**
 * The page's settings with every field of `l` the page has a setting for: t, SP, p, v, the
 * async dgrad overlap (on: the advisor's layouts assume it, as Megatron runs it),
 * `--tp-comm-overlap` as the page's chunked TP overlap (`tpoverlap`: kept if on and legal, else t
 * chunks, one per rank's shard; off when the row has none) and the micro-batch when the
 * cluster model is the page's own layer. Context parallelism, recompute, the distributed optimizer
 * and the gradient and parameter overlaps have no page setting: they are listed in `notApplied`.
 */
export function applyAdvisorRow(s: Settings, l: ParallelLayout): AdvisorApply {
  const notApplied: string[] = [];
  let tpOverlapChunks = 1;
  if (l.tpCommOverlap) {
    const k = chunksFor(s, l.tp);
    if (k === undefined)
      notApplied.push(`--tp-comm-overlap (the page layer's s = ${s.s} tokens do not split into t = ${l.tp} shards)`);
    else tpOverlapChunks = k;
  }
  if (s.cmodel !== 'layer' && l.microBatch !== s.b)
    notApplied.push(
      `--micro-batch-size ${l.microBatch} (the page's b is its own layer's; the cluster model is not it)`,
    );
  const none = 'no page setting';
  if (l.cp > 1) notApplied.push(`--context-parallel-size ${l.cp} (${none})`);
  if (l.recompute !== 'none') notApplied.push(`--recompute-granularity ${l.recompute} (${none})`);
  if (l.distributedOptimizer) notApplied.push(`--use-distributed-optimizer (${none})`);
  if (l.overlapGradReduce) notApplied.push(`--overlap-grad-reduce (${none})`);
  if (l.overlapParamGather) notApplied.push(`--overlap-param-gather (${none})`);
  const settings: Settings = {
    ...s,
    tp: l.tp,
    sp: l.sp,
    pp: l.pp,
    vpp: l.vpp,
    overlap: true,
    tpOverlapChunks,
    ...(s.cmodel === 'layer' && { b: l.microBatch }),
  };
  return { settings, notApplied };
}

/** True when the page already runs `l` as far as it can (every field applyAdvisorRow sets is as the row has it). */
export function rowOnPage(s: Settings, l: ParallelLayout): boolean {
  const next = applyAdvisorRow(s, l).settings;
  return (
    next.tp === s.tp &&
    next.sp === s.sp &&
    next.pp === s.pp &&
    next.vpp === s.vpp &&
    next.overlap === s.overlap &&
    next.tpOverlapChunks === s.tpOverlapChunks &&
    next.b === s.b
  );
}
