import type { CollectiveOp } from '../comm/collectives.ts';
import { dtypeBytes } from '../hardware/dtype.ts';
import { peakFlops } from '../hardware/gpus.ts';
import { collectiveTimeUs } from '../hardware/interconnect.ts';
import { memoryBoundUs } from '../hardware/kernel-time.ts';
import { bytesPerElement } from '../accounting/parameters.ts';
import { groupLink } from '../hardware/systems.ts';
import { gpuMemory, stateBytesPerParam, type GpuMemory } from '../accounting/training-memory.ts';
import { microBatchesOf, setupConfig, type TrainingSetup } from '../megatron/training-setup.ts';
import type { LayerConfig } from '../parallel/config.ts';
import { makePlan } from '../parallel/plan.ts';
import type { LayerPlan } from '../parallel/plan-types.ts';
import { isPerStep, projectLayer, tpGroupLink, type Machine } from './projected-layer.ts';
import type { Timeline } from '../schedule/schedule.ts';

/** The projection of one training step (times in ms, per GPU unless said). */
export interface StepProjection {
  readonly setup: TrainingSetup;
  readonly machine: Machine;
  readonly dp: number;
  /** m: micro-batches per replica per step. */
  readonly microBatches: number;
  /** One block's micro-batch on the machine, and the plan with embedding, output and loss. */
  readonly block: Timeline;
  readonly full: Timeline;
  /** One micro-batch through all L layers: full + (L − 1)·block. */
  readonly microBatchMs: number;
  /** TP communication not hidden by compute, all micro-batches (worst rank). */
  readonly tpExposedMs: number;
  /** Data-parallel gradient all-reduce after the last backward (bucketed, not overlapped). */
  readonly dpAllReduceMs: number;
  readonly dpBuckets: number;
  /** Once-per-step collectives of the plan's finalize phase, coalesced over layers. */
  readonly finalizeMs: number;
  /** Adam update (memory-bound). */
  readonly optimizerMs: number;
  readonly stepMs: number;
  readonly tokensPerStep: number;
  readonly tokensPerS: number;
  /** GEMM FLOPs of the model (TP = 1 shapes, forward + backward) per step, all GPUs. */
  readonly modelFlopsPerStep: number;
  readonly tflopsPerGpu: number;
  /** Model FLOPs / (N · dense peak · step). */
  readonly mfu: number;
  /** Exposed communication per rank: TP exposed + DP all-reduce + finalize. */
  readonly exposedMs: number;
  readonly exposedShare: number;
  readonly memory: GpuMemory;
}

/**
 * Megatron DDP's gradient bucket (elements): max(40M, 1M · DP) (megatron/core/distributed,
 * DistributedDataParallelConfig.bucket_size default in `_get_default_bucket_size`-era code).
 */
export const bucketElements = (dp: number): number => Math.max(40_000_000, 1_000_000 * dp);

const worstExposed = (t: Timeline): number => Math.max(0, ...t.totals.map((r) => r.exposedMs));

/** The two plans of a configuration: with the vocabulary (one block inside) and the block alone. */
async function plans(c: LayerConfig): Promise<{ full: LayerPlan; block: LayerPlan }> {
  const full = (await makePlan(c)).plan;
  const block = c.vocab > 0 ? (await makePlan({ ...c, vocab: 0 })).plan : full;
  return { full, block };
}

/** GEMM FLOPs of the plan's ops (one rank). */
const gemmFlops = (p: LayerPlan): number => p.ops.reduce((a, o) => a + (o.kind === 'gemm' ? o.gemm.flops : 0), 0);

/**
 * What a step's layers cost on a machine, independent of depth, budget, batch and recompute: the
 * two plans (with the vocabulary, and one block alone) scheduled with projected kernels and links,
 * the block's forward part (what full recomputation runs again), and the TP = 1 GEMM FLOPs of each
 * plan. Configurations that share the layer (sizes, b, t, SP), the machine and the overlap share
 * it (the advisor caches it: planning and scheduling the layer is the expensive part of a step).
 */
export interface LayerPricing {
  readonly full: LayerPlan;
  readonly block: LayerPlan;
  readonly fullT: Timeline;
  readonly blockT: Timeline;
  /** The block's forward: what full recomputation runs again in backward. */
  readonly forward: { readonly ms: number; readonly exposedMs: number };
  /** GEMM FLOPs at TP = 1 (model FLOPs) of the full plan and of one block. */
  readonly refFlops: { readonly full: number; readonly block: number };
}

/**
 * Which TP ranks a pricing schedules: `all` (the timelines the page draws) or `first`, rank 0
 * alone. The two give the same step, exposed time and memory: projectOps prices every rank's op
 * alike (the ranks run the same shapes) and a collective's transfer is the slowest member's, so
 * rank 0's timeline is every rank's; `first` costs 1/t of the scheduling.
 */
export type PricedRanks = 'all' | 'first';

/** Prices the layer of `setup` on `machine` (the depth-, budget-, batch- and recompute-free part of a step). */
export async function priceLayers(
  setup: TrainingSetup,
  machine: Machine,
  ranks: PricedRanks = 'all',
): Promise<LayerPricing> {
  const c = setupConfig(setup);
  const planned = await plans(c);
  const only = (p: LayerPlan): LayerPlan => (ranks === 'all' ? p : { ...p, ranks: p.ranks.slice(0, 1) });
  const full = only(planned.full);
  const block = planned.block === planned.full ? full : only(planned.block);
  const fullT = projectLayer(full, machine, setup.overlap);
  const blockT = full === block ? fullT : projectLayer(block, machine, setup.overlap);
  const ref = await plans({ ...c, tp: 1, sp: false });
  const refFlops = { full: gemmFlops(ref.full), block: gemmFlops(ref.block) };
  return { full, block, fullT, blockT, forward: forwardPart(blockT), refFlops };
}

/**
 * One training step on `machine`:
 *   micro-batch = full + (L − 1)·block   (each plan scheduled with projected kernels and links)
 *   step = m · micro-batch + DP all-reduce + finalize + optimizer
 * The DP gradient all-reduce runs after the last backward, in buckets, not overlapped (Megatron's
 * default without --overlap-grad-reduce); its group of N/t ranks is strided by t.
 */
export async function projectStep(setup: TrainingSetup, machine: Machine): Promise<StepProjection> {
  return assembleStep(setup, machine, await priceLayers(setup, machine));
}

/** The step of `setup` from its layer's pricing (priceLayers of the same layer and machine). */
export function assembleStep(setup: TrainingSetup, machine: Machine, pricing: LayerPricing): StepProjection {
  const c = setupConfig(setup);
  const { system, dtype } = machine;
  const L = setup.layers;
  const m = microBatchesOf(setup);
  const dp = setup.gpus / setup.tp;
  const { full, block, fullT, blockT, refFlops } = pricing;
  const redo = setup.recompute ? pricing.forward : { ms: 0, exposedMs: 0 };
  const microBatchMs = fullT.stepMs + (L - 1) * blockT.stepMs + L * redo.ms;
  const tpExposedMs = m * (worstExposed(fullT) + (L - 1) * worstExposed(blockT) + L * redo.exposedMs);

  const memory = gpuMemory(full, block, L, dtype, system.gpu.memoryGiB, setup.recompute ?? false);
  const gradBytes = stateBytesPerParam[dtype].grads;
  const buckets = Math.ceil(memory.params / bucketElements(dp));
  const dpLink = groupLink(system, dp, Math.max(1, Math.floor(system.gpusPerNode / setup.tp)));
  let dpAllReduceMs = 0;
  if (dp > 1)
    for (let i = 0; i < buckets; i++) {
      const elems = Math.min(bucketElements(dp), memory.params - i * bucketElements(dp));
      dpAllReduceMs += (system.collectiveBaseUs + collectiveTimeUs('allReduce', elems * gradBytes, dp, dpLink)) / 1e3;
    }

  const finalizeMs = finalizeTime(full, block, L, machine);
  const per = stateBytesPerParam[dtype];
  const optimizerMs = memoryBoundUs(memory.params * (2 * (per.optimizer + per.weights) + per.grads), system.gpu) / 1e3;
  const stepMs = m * microBatchMs + dpAllReduceMs + finalizeMs + optimizerMs;

  const modelFlopsPerStep = dp * m * (refFlops.full + (L - 1) * refFlops.block);
  const tokensPerStep = dp * m * c.b * c.s;
  const tflopsPerGpu = modelFlopsPerStep / (setup.gpus * stepMs * 1e-3) / 1e12;
  const exposedMs = tpExposedMs + dpAllReduceMs + finalizeMs;
  return {
    setup,
    machine,
    dp,
    microBatches: m,
    block: blockT,
    full: fullT,
    microBatchMs,
    tpExposedMs,
    dpAllReduceMs,
    dpBuckets: dp > 1 ? buckets : 0,
    finalizeMs,
    optimizerMs,
    stepMs,
    tokensPerStep,
    tokensPerS: tokensPerStep / (stepMs * 1e-3),
    modelFlopsPerStep,
    tflopsPerGpu,
    mfu: (tflopsPerGpu * 1e12) / peakFlops(system.gpu, dtype),
    exposedMs,
    exposedShare: exposedMs / stepMs,
    memory,
  };
}

/** The forward pass of a scheduled block: when its last forward op ends, and its exposed comm. */
function forwardPart(t: Timeline): { ms: number; exposedMs: number } {
  const fwd = t.events.filter((e) => e.phase === 'forward');
  const worst = Math.max(
    0,
    ...t.totals.map((r) => fwd.filter((e) => e.rank === r.rank).reduce((a, e) => a + e.exposedMs, 0)),
  );
  return { ms: Math.max(0, ...fwd.map((e) => e.t1)), exposedMs: worst };
}

/**
 * The plan's finalize-phase collectives (e.g. the SP norm-gradient all-reduce in
 * finalize_model_grads), coalesced over the L layers into one call per collective kind.
 */
function finalizeTime(full: LayerPlan, block: LayerPlan, L: number, machine: Machine): number {
  const payload = new Map<CollectiveOp, { bytes: number; group: number }>();
  const add = (p: LayerPlan, times: number): void => {
    for (const op of p.ops) {
      if (!isPerStep(op) || op.kind !== 'collective' || op.collective.groupSize <= 1) continue;
      const c = op.collective;
      const prev = payload.get(c.op) ?? { bytes: 0, group: c.groupSize };
      const bytes = (c.payloadBytes / bytesPerElement) * dtypeBytes[machine.dtype] * times;
      payload.set(c.op, { bytes: prev.bytes + bytes, group: c.groupSize });
    }
  };
  add(full, 1);
  if (block !== full) add(block, L - 1);
  let ms = 0;
  const { system } = machine;
  for (const [op, { bytes, group }] of payload) {
    const link = tpGroupLink(system, group);
    ms += (system.collectiveBaseUs + collectiveTimeUs(op, bytes, group, link)) / 1e3;
  }
  return ms;
}

/** One row of the fixed-budget table: a degree t with DP = N/t, or why it cannot run. */
export type BudgetRow =
  | { readonly tp: number; readonly ok: true; readonly step: StepProjection }
  | { readonly tp: number; readonly ok: false; readonly reason: string };

/** The step at each t of `degrees` over the same budget N (t × DP = N); illegal t say why. */
export async function fixedBudget(
  setup: Omit<TrainingSetup, 'tp'>,
  degrees: readonly number[],
  machine: Machine,
): Promise<BudgetRow[]> {
  const rows: BudgetRow[] = [];
  for (const tp of degrees) {
    try {
      rows.push({ tp, ok: true, step: await projectStep({ ...setup, tp }, machine) });
    } catch (e) {
      rows.push({ tp, ok: false, reason: (e as Error).message });
    }
  }
  return rows;
}
