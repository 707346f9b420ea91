import type { ParallelLayout } from '../../megatron/parallel-layout.ts';
import { legalTpOverlapChunks, tpOverlapProblem } from '../../parallel/tp-overlap.ts';
import { resolveGlobalBatch } from '../../megatron/global-batch.ts';
import { dpCap, mCap, settingsTable, type Settings } from '../settings/state.ts';
import { clusterModelOf } from '../settings/cluster-model.ts';
import { defaultRecomputeModules } from '../../megatron/recompute-modules.ts';

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
 * The page's settings with every field of `l` the page has a setting for: t, SP, p, v, cp,
 * recompute (selective: the row's --recompute-modules, as a MoE model's search tries them; absent,
 * Megatron's default module, core_attn, as the advisor prices it), the
 * distributed optimizer (`distopt`), the gradient and parameter overlaps, FSDP, the async dgrad
 * overlap and the pipeline's p2p overlap (on: the advisor's layouts assume them, as Megatron runs them), `--tp-comm-overlap` as the
 * page's chunked TP overlap (`tpoverlap`: kept if on and legal, else t chunks, one per rank's shard;
 * off when the row has none), the micro-batch when the cluster model is the page's own layer, and
 * the row's DP and micro-batches as the mesh's d and m (DP = N/(t·p·cp) on the page's budget N,
 * m = G/(b·DP); the cluster panel projects the mesh's d and m), each where its cap allows, and
 * EP and ETP when the row has them (an MoE cluster model): the page's `ep` and `etp` are the
 * cluster's and its own MoE block's, one setting each, as p and v are (a value the ranks cannot
 * run gets its message at the control, moe-settings.ts moeIssues).
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
  const modelB = clusterB(s);
  if (s.cmodel !== 'layer' && l.microBatch !== modelB)
    notApplied.push(
      `--micro-batch-size ${l.microBatch} (the cluster model keeps its own b = ${modelB}; the page's b is its own layer's)`,
    );
  // The row's DP and m: the budget N = t·p·cp·DP and the global batch G = b·DP·m the advisor searched.
  const dp = s.gpus / (l.tp * l.pp * l.cp);
  const inBudget = Number.isInteger(dp) && dp >= 1;
  const m = inBudget ? resolveGlobalBatch(s.gbatch, modelB, s.gpus, [l.tp], l.pp * l.cp) / (modelB * dp) : 0;
  if (inBudget && dp > dpCap.max) notApplied.push(`DP ${dp} (${dpCap.why}: d stays ${s.dp})`);
  if (inBudget && m > mCap.max) notApplied.push(`${m} micro-batches (m ≤ ${mCap.max}: ${mCap.why}; m stays ${s.m})`);
  const settings: Settings = {
    ...s,
    ...(inBudget && dp <= dpCap.max && { dp }),
    ...(inBudget && m <= mCap.max && { m }),
    tp: l.tp,
    sp: l.sp,
    pp: l.pp,
    vpp: l.vpp,
    cp: l.cp,
    recompute: l.recompute,
    ...(l.recompute === 'selective' && { rmodules: l.recomputeModules ?? defaultRecomputeModules }),
    distopt: l.distributedOptimizer,
    ogr: l.overlapGradReduce,
    opg: l.overlapParamGather,
    fsdp: l.fsdp ?? null,
    overlap: true,
    p2pov: true,
    tpOverlapChunks,
    ...(s.cmodel === 'layer' && { b: l.microBatch }),
    // A dense row sets neither (ParallelLayout: absent on a dense model's layouts); ETP absent is t.
    ...(l.ep !== undefined && { ep: l.ep, etp: l.etp ?? l.tp }),
  };
  return { settings, notApplied };
}

/** b of the cluster model, or the page's b where the model cannot be read (its message is at the cmodel control). */
function clusterB(s: Settings): number {
  try {
    return clusterModelOf(s).sizes.b;
  } catch {
    return s.b;
  }
}

/** True when the page already runs `l` as far as it can (every field applyAdvisorRow sets is as the row has it). */
export function rowOnPage(s: Settings, l: ParallelLayout): boolean {
  const next = applyAdvisorRow(s, l).settings;
  const same = <K extends keyof Settings>(k: K): boolean =>
    settingsTable[k].format(next[k]) === settingsTable[k].format(s[k]);
  return appliedFields.every(same);
}

/** The fields applyAdvisorRow sets. */
const appliedFields = [
  'tp',
  'sp',
  'pp',
  'vpp',
  'cp',
  'recompute',
  'rmodules',
  'distopt',
  'ogr',
  'opg',
  'fsdp',
  'overlap',
  'p2pov',
  'tpOverlapChunks',
  'b',
  'dp',
  'm',
  'ep',
  'etp',
] as const satisfies readonly (keyof Settings)[];
