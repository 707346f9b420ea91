import {
  dataParallel,
  layoutRejection,
  layoutRejectionText,
  type ClusterModel,
  type LayoutRejection,
  type ParallelLayout,
} from '../../megatron/parallel-layout.ts';
import { enumerateLayouts, spaceSize, type SearchSpace } from './advisor-space.ts';
import { cudaGraphRefusalsOf, stepLowerBounds } from '../step/chunk-times.ts';
import { stepSummary, type StepSummary } from '../step/cluster-projection.ts';
import { type LayerPlans, type LayerPricing } from '../step/layer-pricing.ts';
import { LayerPricingCache } from '../step/layer-pricing-cache.ts';
import { layoutSetup, type SetupExtras } from './layout-setup.ts';
import type { TrainingSetup } from '../../megatron/training-setup.ts';
import { fsdpRefusals } from '../../megatron/fsdp.ts';
import { fsdpJobOf } from '../step/fsdp-step.ts';
import type { Machine } from '../layer/projected-layer.ts';
import { defaultKernelOptions } from '../layer/kernel-options.ts';

/** The question the advisor answers: the fastest layouts of `model` on N GPUs of `machine` at a global batch. */
export interface AdvisorProblem {
  readonly model: ClusterModel;
  readonly machine: Machine;
  readonly gpus: number;
  /** Sequences per step (--global-batch-size). */
  readonly globalBatch: number;
  /** Kernel and weight choices every candidate shares (flash attention, tied embeddings). */
  readonly extras?: SetupExtras;
}

/** Why a candidate is not ranked: a Megatron rule, a flag the step model cannot express, or memory. */
export type AdvisorRejection = LayoutRejection | 'unexpressed' | 'graphs' | 'oom' | 'slower';

/** What each advisor rejection means. */
export const advisorRejectionText: Readonly<Record<AdvisorRejection, string>> = {
  ...layoutRejectionText,
  unexpressed: 'a flag the step model cannot express yet',
  graphs:
    "Megatron's CUDA graph rules with recomputation (cuda-graph-rules.ts: full recompute without full_iteration; with dropout, a recomputed core_attn, mlp or moe in the graph)",
  oom: 'the projected peak memory exceeds the GPU',
  slower:
    "provably slower than the k-th fastest: its busiest stage's compute alone exceeds that step (memory not checked)",
};

/**
 * One ranked layout: its figures from the step projection (stepSummary; exposedShare is exposed
 * communication / step), memory in GiB (plain data: it crosses a worker boundary).
 */
export interface AdvisorRow extends Omit<StepSummary, 'memoryBytes' | 'capacityBytes'> {
  readonly layout: ParallelLayout;
  readonly dp: number;
  readonly memoryGiB: number;
  readonly capacityGiB: number;
}

/** The advisor's answer: the k fastest layouts and what became of every other candidate. */
export interface AdvisorResult {
  readonly candidates: number;
  /** Candidates projected in full that fit (the rest were rejected or provably slower). */
  readonly ranked: number;
  readonly rejected: Readonly<Record<AdvisorRejection, number>>;
  /** Distinct layers planned and scheduled (the rest came from the cache). */
  readonly layersPriced: number;
  /** The k fastest, fastest first (ties: less memory first). */
  readonly top: readonly AdvisorRow[];
}

/** Options: k rows, and a progress callback called every `progressEvery` candidates and at the end. */
export interface AdvisorOptions {
  readonly k: number;
  readonly onProgress?: (done: number, total: number) => void;
  readonly progressEvery?: number;
}

/** Every rejection reason at 0. */
const noRejections = (): Record<AdvisorRejection, number> => ({
  'tp-heads': 0,
  gpus: 0,
  'pp-layers': 0,
  vpp: 0,
  'cp-seq': 0,
  'sp-seq': 0,
  batch: 0,
  'interleave-batch': 0,
  'flag-needs': 0,
  moe: 0,
  fsdp: 0,
  unexpressed: 0,
  graphs: 0,
  oom: 0,
  slower: 0,
});

/** a before b: faster step, then less memory. */
const faster = (a: AdvisorRow, b: AdvisorRow): boolean =>
  a.stepMs < b.stepMs || (a.stepMs === b.stepMs && a.memoryGiB < b.memoryGiB);

/**
 * Inserts `row` into `top` (sorted, at most k long) if it belongs there: after every row faster
 * than it or as fast with no more memory (a row equal in both to one already kept goes after it).
 */
export function keepTop(top: AdvisorRow[], row: AdvisorRow, k: number): void {
  if (top.length === k && !faster(row, top[k - 1]!)) return;
  let i = top.length;
  while (i > 0 && faster(row, top[i - 1]!)) i--;
  top.splice(i, 0, row);
  if (top.length > k) top.pop();
}

/** A candidate that passed the rules, with its pricing and its step's lower bound. */
interface Bounded {
  readonly layout: ParallelLayout;
  readonly setup: TrainingSetup;
  readonly pricing: LayerPricing;
  readonly boundMs: number;
  /** The machine with the candidate's own --tp-comm-overlap. */
  readonly machine: Machine;
}

/**
 * Enumerates `space`, drops each candidate Megatron refuses (counted by rule) or that the step
 * model cannot express (counted), prices the rest's layers (shared by candidates with the same
 * layer) and bounds each step from below (stepLowerBounds: those whose weights, optimizer state
 * and gradients alone exceed the GPU are out of memory for certain, counted); then projects the candidates in
 * order of that bound with projectStep's own assembly, drops those that do not fit in memory
 * (counted), and stops once the next bound is no faster than the k-th step found: every
 * candidate left is provably slower (counted). The top k are exactly those of projecting all.
 */
export async function advise(
  problem: AdvisorProblem,
  space: SearchSpace,
  opts: AdvisorOptions,
): Promise<AdvisorResult> {
  if (!(Number.isInteger(opts.k) && opts.k >= 1)) throw new Error(`k (${opts.k}) must be a whole number ≥ 1.`);
  const { model, machine, gpus, globalBatch } = problem;
  // --tp-comm-overlap is a kernel option per candidate: one machine and one pricing cache each way.
  // The two share their layer plans (the option changes the pricing, not the plan).
  const plans = new Map<string, Promise<LayerPlans>>();
  const variants = [false, true].map((on) => {
    const m: Machine = { ...machine, kernels: { ...(machine.kernels ?? defaultKernelOptions), tpCommOverlap: on } };
    return { machine: m, cache: new LayerPricingCache(m, 'first', plans) };
  });
  const rejected = noRejections();
  const total = spaceSize(space);
  const every = opts.progressEvery ?? 1024;
  let done = 0;
  const legal: Bounded[] = [];
  for (const layout of enumerateLayouts(space)) {
    if (++done % every === 0) opts.onProgress?.(done, total);
    const rule = layoutRejection(model, layout, gpus, globalBatch);
    if (rule) {
      rejected[rule]++;
      continue;
    }
    const { setup, unexpressed, tpCommOverlap } = layoutSetup(model, layout, gpus, globalBatch, problem.extras);
    if (unexpressed.length) {
      rejected.unexpressed++;
      continue;
    }
    // FSDP's rules on the run beside the layout: FSDP2 refuses fp16, tied embeddings, gradient accumulation fusion.
    if (layout.fsdp && fsdpRefusals(layout.fsdp, fsdpJobOf(setup, machine)).length) {
      rejected.fsdp++;
      continue;
    }
    const v = variants[tpCommOverlap ? 1 : 0]!;
    if (cudaGraphRefusalsOf(setup, v.machine.kernels!).length) {
      rejected.graphs++;
      continue;
    }
    const pricing = await v.cache.price(setup);
    const bound = stepLowerBounds(setup, v.machine, pricing);
    if (bound.memoryBytes > machine.system.gpu.memoryGiB * 2 ** 30) {
      rejected.oom++;
      continue;
    }
    legal.push({ layout, setup, pricing, boundMs: bound.stepMs, machine: v.machine });
  }
  legal.sort((a, b) => a.boundMs - b.boundMs);
  const top: AdvisorRow[] = [];
  let ranked = 0;
  for (const [i, c] of legal.entries()) {
    if (top.length === opts.k && c.boundMs >= top[opts.k - 1]!.stepMs) {
      rejected.slower += legal.length - i;
      break;
    }
    // Memory first, then the step's times, as assembleStep has them (stepSummary: no per-op objects).
    const step = stepSummary(c.setup, c.machine, c.pricing);
    if (!step) {
      rejected.oom++;
      continue;
    }
    ranked++;
    keepTop(
      top,
      {
        layout: c.layout,
        dp: dataParallel(c.layout, gpus),
        microBatches: step.microBatches,
        stepMs: step.stepMs,
        tokensPerS: step.tokensPerS,
        tflopsPerGpu: step.tflopsPerGpu,
        mfu: step.mfu,
        trainDtypeMfu: step.trainDtypeMfu,
        exposedShare: step.exposedShare,
        memoryGiB: step.memoryBytes / 2 ** 30,
        capacityGiB: step.capacityBytes / 2 ** 30,
      },
      opts.k,
    );
  }
  opts.onProgress?.(done, total);
  const layersPriced = variants.reduce((a, v) => a + v.cache.size, 0);
  return { candidates: done, ranked, rejected, layersPriced, top };
}
