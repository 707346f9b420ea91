import type { GpuMemory } from '../../accounting/training-memory.ts';
import type { Degrees, TrainingSetup } from '../../megatron/training-setup.ts';
import type { Timeline } from '../../schedule/schedule.ts';
import type { OverlapBuffer } from '../layer/overlap-buffers.ts';
import type { Machine } from '../layer/projected-layer.ts';
import { setupStateBytes } from './fsdp-step.ts';
import type { LinkSharingCost } from '../links/link-sharing.ts';
import { stageMemory, stagePeakBytes, type MemoryClass, type StageMemory } from '../pipeline/memory-timeline.ts';
import { pipelineRun, pipelineTimes, type PipelineRun } from '../pipeline/pipeline-schedule.ts';
import type { PipelineSplit } from '../../mesh/pipeline-split.ts';
import { chunkTimes, pipelineInput } from './chunk-times.ts';
import { priceLayers, type LayerPricing } from './layer-pricing.ts';
import type { MlaStepModel } from './mla-step.ts';
import type { MoeStepModel, MoeTail } from './moe-step.ts';
import { stageAllocations } from './stage-allocations.ts';
import type { CudaGraphStage } from './cuda-graph-memory.ts';
import { stepTimes, type DpCommMs, type ExposedByGroup } from './step-times.ts';
import type { WeightCast } from './quantized-params.ts';

/** The projection of one training step (times in ms, per GPU unless said). */
export interface StepProjection {
  readonly setup: TrainingSetup;
  readonly machine: Machine;
  readonly degrees: Degrees;
  readonly dp: number;
  /** m: micro-batches per replica per step. */
  readonly microBatches: number;
  /** One block's micro-batch on the machine, and the plan with embedding, output and loss. */
  readonly block: Timeline;
  readonly full: Timeline;
  /** One micro-batch through all L layers on one GPU (p = 1): full + (L − 1)·block (+ recompute). */
  readonly microBatchMs: number;
  /** The layers of each stage and chunk. */
  readonly split: PipelineSplit;
  /** The simulated pipeline schedule (p = 1: the m micro-batches back to back). */
  readonly pipeline: PipelineRun;
  /** Idle share of the busiest stage: (p−1)/(m+p−1) with equal stages; 0 without pipelining. */
  readonly bubbleShare: number;
  /** TP communication not hidden by compute, all micro-batches (slowest stage). */
  readonly tpExposedMs: number;
  /** Data-parallel gradient sync past the pipeline's end (all-reduce, or reduce-scatter with the distributed optimizer). */
  readonly dpAllReduceMs: number;
  readonly dpBuckets: number;
  /** The distributed optimizer's parameter all-gather not hidden (0 without it). */
  readonly paramGatherMs: number;
  /**
   * The part of paramGatherMs inside the simulated schedule: with 1F1B and p > 1 each stage's first
   * forward waits for its gather (dp-sync.ts gatherInSchedule), lengthening the span by this much.
   */
  readonly paramGatherInScheduleMs: number;
  /** Tied embeddings with p > 1: the embedding-gradient all-reduce between the first and last stage. */
  readonly embeddingAllReduceMs: number;
  /** Once-per-step collectives of the plan's finalize phase, coalesced over layers. */
  readonly finalizeMs: number;
  /** Adam update (memory-bound) of this GPU's parameters (its shard with the distributed optimizer). */
  readonly optimizerMs: number;
  /** The DP collectives per step, hidden or not: the gradient sync and the parameter all-gather (step-times.ts). */
  readonly dpCommMs: DpCommMs;
  /** Under an fp8 or fp4 recipe: the weights' casts per step and, with quantized parameters, the amax all-reduce (quantized-params.ts). */
  readonly weightCast?: WeightCast;
  readonly stepMs: number;
  readonly tokensPerStep: number;
  readonly tokensPerS: number;
  /** GEMM FLOPs of the model (TP = 1 shapes, forward + backward, once) per step, all GPUs. */
  readonly modelFlopsPerStep: number;
  /** Model FLOPs plus the recomputed forwards (what the GPUs execute). */
  readonly executedFlopsPerStep: number;
  readonly tflopsPerGpu: number;
  /** Model FLOPs / (N · dense peak · step), the peak of the GEMMs' format (fp8 under --fp8-format; mfuPeakFlops). */
  readonly mfu: number;
  /** Executed FLOPs / (N · that peak · step) (hardware FLOPs utilization). */
  readonly executedMfu: number;
  /** Model FLOPs / (N · the training dtype's dense peak · step): `mfu` for bf16/fp16 runs, above it for fp8. */
  readonly trainDtypeMfu: number;
  readonly exposedByGroup: ExposedByGroup;
  /**
   * Compute time lost to overlapped communication outside the layer (whose TP overlaps are
   * priced in its kernels, projected-layer.ts), ms on the critical path: `dp` the gradient
   * buckets under backward and the parameter all-gather under forward, `pp` the p2p beside compute.
   */
  readonly overlapCostMs: { readonly dp: number; readonly pp: number };
  /** Memory each overlap that is on holds per GPU (overlap-buffers.ts), resident in `stageMemory`. */
  readonly overlapBuffers: readonly OverlapBuffer[];
  /** Overlapped DP collectives that shared a link with TP or pipeline traffic (link-sharing.ts). */
  readonly linkSharing: readonly LinkSharingCost[];
  /** What the shared links added to the step (inside exposedByGroup.dp and dpAllReduceMs), ms. */
  readonly linkSharingMs: number;
  /** Σ exposedByGroup. */
  readonly exposedMs: number;
  readonly exposedShare: number;
  /** The peak stage's memory (totalBytes = its peak over the step's live intervals). */
  readonly memory: GpuMemory;
  /** Every stage's live-interval timeline and peak. */
  readonly stageMemory: readonly StageMemory[];
  /** Parameters each stage holds (its TP shard; with MoE the non-expert ones). */
  readonly stageParams: readonly number[];
  /** With MoE: the MoE layer's terms, the expert state per stage and the expert-DP tail. */
  readonly moe?: MoeStep;
  /** With multi-latent attention: the MLA layer's terms and what it changes over the dense attention (mla-step.ts). */
  readonly mla?: MlaStepModel;
  /** With FSDP: one unit's all-gather and reduce-scatter (ms) and what its collectives leave exposed per step (in exposedByGroup.dp). */
  readonly fsdp?: { readonly gatherMs: number; readonly reduceScatterMs: number; readonly exposedMs: number };
  /** With --cuda-graph-impl: per stage, the graphs captured and the static buffers they hold (cuda-graph-memory.ts). */
  readonly cudaGraphs?: readonly CudaGraphStage[];
}

/** A MoE step's own figures (moe-step.ts). */
export interface MoeStep {
  readonly model: MoeStepModel;
  /** Expert parameters per stage (E/EP experts, 1/ETP each). */
  readonly stageExpertParams: readonly number[];
  readonly tail: MoeTail;
}

/**
 * One training step on `machine`, Megatron-Core style:
 *   per micro-batch, chunk c of stage i runs n_ic layers (+ the embedding on the first, the output
 *   and loss on the last), each priced by the scheduled plans (projected kernels and TP links),
 *   plus context parallelism's ring exchange and the recomputed forwards;
 *   the pipeline schedule (1F1B, or interleaved with v > 1) is simulated with p2p sends on the
 *   stage boundary's link; the gradient sync (buckets, overlapped or after backward) runs on
 *   each stage's DP stream; then the tied-embedding all-reduce, the finalize collectives, the
 *   optimizer and the distributed optimizer's parameter all-gather.
 * Memory is each stage's peak over live intervals built from the simulated schedule.
 */
export async function projectStep(setup: TrainingSetup, machine: Machine): Promise<StepProjection> {
  return assembleStep(setup, machine, await priceLayers(setup, machine));
}
/** What the advisor ranks a step by, each exactly as assembleStep has it (plain data). */
export interface StepSummary {
  readonly microBatches: number;
  readonly stepMs: number;
  readonly tokensPerS: number;
  readonly tflopsPerGpu: number;
  readonly mfu: number;
  readonly trainDtypeMfu: number;
  readonly exposedShare: number;
  /** The peak stage's peak (assembleStep's memory.totalBytes). */
  readonly memoryBytes: number;
  readonly capacityBytes: number;
}

/**
 * assembleStep's figures the advisor ranks by, or undefined when the step does not fit in the
 * GPU (exactly assembleStep(setup, machine, pricing).memory.oom), at a fraction of its cost: the
 * pipeline simulated as columns, no object per op or per allocation, and the memory checked
 * first, stage by stage, before the rest of the step is timed.
 */
export function stepSummary(setup: TrainingSetup, machine: Machine, pricing: LayerPricing): StepSummary | undefined {
  const ct = chunkTimes(setup, machine, pricing);
  const input = pipelineInput(setup, machine, ct);
  const run = pipelineTimes({ ...input.pipeIn, senderBusyMs: input.senderBusyMs });
  const allocations = stageAllocations(setup, machine, ct);
  const capacityBytes = machine.system.gpu.memoryGiB * 2 ** 30;
  let memoryBytes = 0;
  for (let i = 0; i < ct.split.layers.length; i++) {
    memoryBytes = Math.max(memoryBytes, stagePeakBytes(run, i, allocations.of(i)));
    if (memoryBytes > capacityBytes) return undefined;
  }
  const t = stepTimes(setup, machine, pricing, ct, input, run);
  return {
    microBatches: ct.m,
    stepMs: t.stepMs,
    tokensPerS: t.tokensPerS,
    tflopsPerGpu: t.tflopsPerGpu,
    mfu: t.mfu,
    trainDtypeMfu: t.trainDtypeMfu,
    exposedShare: t.exposedShare,
    memoryBytes,
    capacityBytes,
  };
}
/** The step of `setup` from its layer's pricing (priceLayers of the same layer and machine). */
export function assembleStep(setup: TrainingSetup, machine: Machine, pricing: LayerPricing): StepProjection {
  const { system, dtype } = machine;
  const { fullT, blockT, pieces } = pricing;
  const ct = chunkTimes(setup, machine, pricing);
  const { deg, m, split, model, layerF, layerB, redoMs } = ct;
  const input = pipelineInput(setup, machine, ct);
  const times = pipelineTimes({ ...input.pipeIn, senderBusyMs: input.senderBusyMs });
  const t = stepTimes(setup, machine, pricing, ct, input, times);
  const pipeline = pipelineRun(times);

  // Memory by lifetime per stage; what the overlaps hold is resident.
  const dpGroup = deg.dp * deg.cp;
  const per = setupStateBytes(setup, dtype, dpGroup);
  const { buffers, of: allocations, graphs } = stageAllocations(setup, machine, ct);
  const stageMem = split.layers.map((_, i) => stageMemory(pipeline, i, allocations(i), t.stepMs));
  const worst = stageMem.reduce((a, s) => (s.peakBytes > a.peakBytes ? s : a));
  const wp = model.stageParams[worst.stage]!;
  const capacityBytes = system.gpu.memoryGiB * 2 ** 30;
  const memory: GpuMemory = {
    params: wp,
    weightBytes: wp * per.weights,
    gradBytes: wp * per.grads,
    optimizerBytes: wp * per.optimizer,
    activationBytes: worst.atPeak.perMicroBatch + worst.atPeak.transient,
    totalBytes: worst.peakBytes,
    capacityBytes,
    oom: worst.peakBytes > capacityBytes,
  };

  const microBatchMs =
    pieces.embedding.forward.ms +
    pieces.embedding.backward.ms +
    pieces.output.forward.ms +
    pieces.output.backward.ms +
    split.layers.flat().reduce((a, n) => a + n * (layerF + layerB), 0) +
    split.layers.reduce((a, row, i) => a + row.reduce((b, _, ch) => b + redoMs(i, ch), 0), 0);
  return {
    setup,
    machine,
    degrees: deg,
    dp: deg.dp,
    microBatches: m,
    block: blockT,
    full: fullT,
    microBatchMs,
    split,
    pipeline,
    bubbleShare: pipeline.bubbleShare,
    tpExposedMs: t.tpExposedMs,
    dpAllReduceMs: t.dpAllReduceMs,
    dpBuckets: t.dpBuckets,
    paramGatherMs: t.paramGatherMs,
    paramGatherInScheduleMs: t.paramGatherInScheduleMs,
    embeddingAllReduceMs: t.embeddingAllReduceMs,
    finalizeMs: t.finalizeMs,
    optimizerMs: t.optimizerMs,
    dpCommMs: t.dpCommMs,
    ...(t.weightCast.castBytes > 0 && { weightCast: t.weightCast }),
    stepMs: t.stepMs,
    tokensPerStep: t.tokensPerStep,
    tokensPerS: t.tokensPerS,
    modelFlopsPerStep: t.modelFlopsPerStep,
    executedFlopsPerStep: t.executedFlopsPerStep,
    tflopsPerGpu: t.tflopsPerGpu,
    mfu: t.mfu,
    executedMfu: t.executedMfu,
    trainDtypeMfu: t.trainDtypeMfu,
    exposedByGroup: t.exposedByGroup,
    overlapCostMs: t.overlapCostMs,
    overlapBuffers: buffers,
    linkSharing: t.linkSharing,
    linkSharingMs: t.linkSharingMs,
    exposedMs: t.exposedMs,
    exposedShare: t.exposedShare,
    memory,
    stageMemory: stageMem,
    stageParams: model.stageParams,
    moe:
      ct.moe && t.moeTail
        ? {
            model: ct.moe,
            stageExpertParams: ct.expertParams.map((row) => row.reduce((a, x) => a + x, 0)),
            tail: t.moeTail,
          }
        : undefined,
    mla: ct.mla,
    fsdp: ct.fsdp
      ? { gatherMs: ct.fsdp.gatherMs, reduceScatterMs: ct.fsdp.reduceScatterMs, exposedMs: t.fsdpExposedMs }
      : undefined,
    cudaGraphs: graphs(0) ? split.layers.map((_, i) => graphs(i)!) : undefined,
  };
}

/** Live bytes per lifetime class at the peak stage's peak. */
export const memoryAtPeak = (p: StepProjection): Readonly<Record<MemoryClass, number>> =>
  p.stageMemory.reduce((a, s) => (s.peakBytes > a.peakBytes ? s : a)).atPeak;
/** One row of the fixed-budget table: a degree t with DP = N/t, or why it cannot run. */
export type BudgetRow =
  | { readonly tp: number; readonly ok: true; readonly step: StepProjection }
  | { readonly tp: number; readonly ok: false; readonly reason: string };

/** The step at each t of `degrees` over the same budget N (t × p × cp × DP = N); illegal t say why. */
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
