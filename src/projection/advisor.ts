import {
  dataParallel,
  layoutRejection,
  layoutRejectionText,
  type ClusterModel,
  type LayoutRejection,
  type ParallelLayout,
} from '../megatron/parallel-layout.ts';
import { enumerateLayouts, spaceSize, type SearchSpace } from './advisor-space.ts';
import { assembleStep } from './cluster-projection.ts';
import { LayerPricingCache } from './layer-pricing-cache.ts';
import { layoutSetup } from './layout-setup.ts';
import type { Machine } from './projected-layer.ts';

/** The question the advisor answers: the fastest layouts of `model` on N GPUs of `machine` at a global batch. */
export interface AdvisorProblem {
  readonly model: ClusterModel;
  readonly machine: Machine;
  readonly gpus: number;
  /** Sequences per step (--global-batch-size). */
  readonly globalBatch: number;
}

/** Why a candidate is not ranked: a Megatron rule, a flag the step model cannot express, or memory. */
export type AdvisorRejection = LayoutRejection | 'unexpressed' | 'oom';

/** What each advisor rejection means. */
export const advisorRejectionText: Readonly<Record<AdvisorRejection, string>> = {
  ...layoutRejectionText,
  unexpressed: 'a flag the step model cannot express yet (pipeline, CP, distributed optimizer, overlaps, selective)',
  oom: 'the projected peak memory exceeds the GPU',
};

/** One ranked layout: its figures from the step projection (plain data: it crosses a worker boundary). */
export interface AdvisorRow {
  readonly layout: ParallelLayout;
  readonly dp: number;
  readonly microBatches: number;
  readonly stepMs: number;
  readonly tokensPerS: number;
  readonly tflopsPerGpu: number;
  readonly mfu: number;
  /** Exposed communication / step. */
  readonly exposedShare: number;
  readonly memoryGiB: number;
  readonly capacityGiB: number;
}

/** The advisor's answer: the k fastest layouts and what became of every other candidate. */
export interface AdvisorResult {
  readonly candidates: number;
  /** Candidates that fit and were ranked. */
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
  unexpressed: 0,
  oom: 0,
});

/** a before b: faster step, then less memory. */
const faster = (a: AdvisorRow, b: AdvisorRow): boolean =>
  a.stepMs < b.stepMs || (a.stepMs === b.stepMs && a.memoryGiB < b.memoryGiB);

/** Inserts `row` into `top` (sorted, at most k long) if it belongs there. */
function keepTop(top: AdvisorRow[], row: AdvisorRow, k: number): void {
  if (top.length === k && !faster(row, top[k - 1]!)) return;
  let i = top.length;
  while (i > 0 && faster(row, top[i - 1]!)) i--;
  top.splice(i, 0, row);
  if (top.length > k) top.pop();
}

/**
 * Enumerates `space`, drops each candidate Megatron refuses (counted by rule), that the step model
 * cannot express (counted) or that does not fit in memory (counted), projects the rest with
 * projectStep's own assembly over layer pricings shared by candidates with the same layer, and
 * keeps the k fastest.
 */
export async function advise(
  problem: AdvisorProblem,
  space: SearchSpace,
  opts: AdvisorOptions,
): Promise<AdvisorResult> {
  if (!(Number.isInteger(opts.k) && opts.k >= 1)) throw new Error(`k (${opts.k}) must be a whole number ≥ 1.`);
  const { model, machine, gpus, globalBatch } = problem;
  const cache = new LayerPricingCache(machine);
  const rejected = noRejections();
  const top: AdvisorRow[] = [];
  const total = spaceSize(space);
  const every = opts.progressEvery ?? 1024;
  let done = 0;
  let ranked = 0;
  for (const layout of enumerateLayouts(space)) {
    if (++done % every === 0) opts.onProgress?.(done, total);
    const rule = layoutRejection(model, layout, gpus, globalBatch);
    if (rule) {
      rejected[rule]++;
      continue;
    }
    const { setup, unexpressed } = layoutSetup(model, layout, gpus, globalBatch);
    if (unexpressed.length) {
      rejected.unexpressed++;
      continue;
    }
    const step = assembleStep(setup, machine, await cache.price(setup));
    if (step.memory.oom) {
      rejected.oom++;
      continue;
    }
    ranked++;
    keepTop(
      top,
      {
        layout,
        dp: dataParallel(layout, gpus),
        microBatches: step.microBatches,
        stepMs: step.stepMs,
        tokensPerS: step.tokensPerS,
        tflopsPerGpu: step.tflopsPerGpu,
        mfu: step.mfu,
        exposedShare: step.exposedShare,
        memoryGiB: step.memory.totalBytes / 2 ** 30,
        capacityGiB: step.memory.capacityBytes / 2 ** 30,
      },
      opts.k,
    );
  }
  opts.onProgress?.(done, total);
  return { candidates: done, ranked, rejected, layersPriced: cache.size, top };
}
