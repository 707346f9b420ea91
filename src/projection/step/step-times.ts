import { gemmPeakFlops, peakFlops } from '../../hardware/gpus.ts';
import { scaledKernelUs } from '../../hardware/calibrated-rates.ts';
import { ncclFootprint, overlapSlowdown } from '../../hardware/overlap-cost.ts';
import type { TrainingSetup } from '../../megatron/training-setup.ts';
import type { Machine } from '../layer/projected-layer.ts';
import { defaultKernelOptions, linearPrecisionOf } from '../layer/kernel-options.ts';
import { gatherBytesPerParam, quantizedWeightsOf, stageLayerParams, weightCastOf } from './quantized-params.ts';
import { bucketSyncUs } from '../links/data-parallel.ts';
import { dpSharedLinks, tpUnderSharing, type LinkSharingCost, type SharedLink } from '../links/link-sharing.ts';
import { pipelineTimes, type PipelineTimes } from '../pipeline/pipeline-schedule.ts';
import type { ChunkTimes, P2pInput } from './chunk-times.ts';
import { stageLinkSharing } from './dp-link-sharing.ts';
import { dpOptionsOf, gatherInSchedule, stageGradSync, stageParamGather } from './dp-sync.ts';
import { finalizeTimeOf } from './finalize.ts';
import { fsdpGatherAfterStepMs } from '../links/fsdp.ts';
import { dpSharding, dpTailChunkParams, setupStateBytes } from './fsdp-step.ts';
import type { LayerPricing } from './layer-pricing.ts';
import { mlaStepFlops } from './mla-step.ts';
import { moeStepFlops, moeTail } from './moe-step.ts';
import { optimizerMs } from './optimizer.ts';
import { gpuOptimizerShare, offloadedStepMs } from './optimizer-offload.ts';
import { pipelineP2p } from './pp-exposure.ts';
import { stepFlops } from './step-flops.ts';
import { tiedEmbeddingAllReduceMs } from './tied-embedding.ts';
import { cpExposedMs, tpExposedMs } from './tp-cp-exposure.ts';

/** Exposed communication per process group, ms per step (the slowest stage's). */
export interface ExposedByGroup {
  readonly tp: number;
  readonly cp: number;
  /** Pipeline p2p: how much the sends lengthen the simulated schedule. */
  readonly pp: number;
  /** Gradient sync past the last backward, the distributed optimizer's parameter all-gather, tied-embedding all-reduce. */
  readonly dp: number;
}

/** What the DP stream adds past the simulated pipeline (dataParallelTail). */
interface DataParallelTail {
  /** The pipeline's end with the DP stream: its overlap costs on compute, and shared links. */
  readonly doneMs: number;
  /** The DP stream's exposure past the pipeline's span, its compute cost aside. */
  readonly exposedMs: number;
  readonly overlapCostMs: number;
  readonly buckets: number;
  readonly paramGatherMs: number;
  readonly paramGatherCostMs: number;
  readonly linkSharing: LinkSharingCost[];
  readonly linkSharingMs: number;
  /** The busiest stage's DP collectives per step, hidden or not: the gradient sync and the parameter all-gather, ms. */
  readonly commMs: DpCommMs;
}

/** The DP collectives' time per step on the busiest stage, hidden or not (dataParallelTail). */
export interface DpCommMs {
  readonly gradMs: number;
  readonly paramGatherMs: number;
  /** Bytes per parameter the busiest stage's parameter all-gather moves (quantized-params.ts gatherBytesPerParam). */
  readonly paramGatherBytesPerParam: number;
}

/**
 * The gradient sync on each stage's DP stream past the simulated pipeline (stageGradSync), the
 * links it shares (stageLinkSharing) and the distributed optimizer's parameter all-gather
 * (stageParamGather), combined over stages: each stage ends at max(compute end + delays, DP end
 * + delays), the step at the latest stage.
 */
function dataParallelTail(
  setup: TrainingSetup,
  machine: Machine,
  pricing: LayerPricing,
  ct: ChunkTimes,
  input: P2pInput,
  pipeline: PipelineTimes,
): DataParallelTail {
  const { system, dtype } = machine;
  const { deg, split, links, model } = ct;
  const o = dpOptionsOf(setup, deg);
  const { dpGroup, distributedOptimizer: distOpt } = o;
  const inSchedule = gatherInSchedule(o, deg.pp);
  const gradBytes = setupStateBytes(setup, dtype, 1).grads;
  // Quantized parameters (--fp8-param-gather, --fp4-param-gather) all-gather fewer bytes (quantized-params.ts).
  const q = quantizedWeightsOf(setup, machine.kernels ?? defaultKernelOptions);
  const paramBytes = split.layers.map((_, i) => gatherBytesPerParam(q, machine, ct, i));
  const sync = (params: number, i = 0) =>
    bucketSyncUs(params, dtype, distOpt, dpGroup, links.dpCp, system, gradBytes, paramBytes[i]);
  const tailParams = dpTailChunkParams(setup, model, split);
  // What the DP collectives beside compute cost it (NCCL's SMs; backward and forward taken as GEMM-bound).
  const dpSlowdown = (op: 'allReduce' | 'reduceScatter' | 'allGather'): number =>
    overlapSlowdown(false, system.gpu, ncclFootprint(op, links.dpCp));
  const gradSlowdown = dpSlowdown(distOpt ? 'reduceScatter' : 'allReduce');
  const gatherSlowdown = dpSlowdown('allGather');
  // Links the overlapped DP collectives share with TP or pipeline traffic (link-sharing.ts).
  const gradOverlap = o.overlapGradReduce && dpGroup > 1;
  const gatherOverlap = o.overlapParamGather && distOpt && dpGroup > 1;
  const shares = gradOverlap || gatherOverlap ? dpSharedLinks(machine, deg) : [];
  const tpShare = shares.some((x) => x.with === 'tp')
    ? tpUnderSharing(pricing, machine, deg, setup.overlap || (setup.overlapSpRegather ?? setup.overlap))
    : undefined;
  const sharing = new Map<string, { -readonly [K in keyof LinkSharingCost]: LinkSharingCost[K] }>();
  const noteSharing = (
    overlap: LinkSharingCost['overlap'],
    sh: SharedLink,
    sharedMs: number,
    computeDelayMs: number,
  ): void => {
    const key = `${overlap}|${sh.with}`;
    const x = sharing.get(key) ?? { overlap, with: sh.with, link: sh.link, sharedMs: 0, computeDelayMs: 0 };
    x.sharedMs = Math.max(x.sharedMs, sharedMs);
    x.computeDelayMs = Math.max(x.computeDelayMs, computeDelayMs);
    sharing.set(key, x);
  };
  const p2p = { p2pMs: input.pipeIn.p2pMs, blocks: input.p2pBlocks, p: deg.pp, v: deg.vpp };
  let pipelineDoneUnshared = 0;
  let dpBuckets = 0;
  let pipelineDone = 0;
  let pipelineDoneNoCost = 0;
  let paramGatherMs = 0;
  let paramGatherCostMs = 0;
  let commMs: DpCommMs = { gradMs: 0, paramGatherMs: 0, paramGatherBytesPerParam: paramBytes[0]! };
  split.layers.forEach((_, i) => {
    const order = pipeline.orders[i]!;
    const ops = { chunk: order.chunk, forward: order.forward, t0: pipeline.t0[i]!, t1: pipeline.t1[i]! };
    const g = stageGradSync(i, ops, tailParams[i]!, o, (p) => sync(p).gradUs, gradSlowdown);
    const { stageEndMs: stageEnd, sync: s, overlapCostMs: gradCost } = g;
    if (dpGroup > 1) dpBuckets = Math.max(dpBuckets, s.buckets);
    const gatherComm = g.chunks.reduce((a, ch) => a + ch.buckets.reduce((b, p) => b + sync(p, i).paramUs / 1e3, 0), 0);
    if (s.commMs + gatherComm > commMs.gradMs + commMs.paramGatherMs)
      commMs = { gradMs: s.commMs, paramGatherMs: gatherComm, paramGatherBytesPerParam: paramBytes[i]! };
    let computeDelay = 0;
    let dpDelay = 0;
    for (const x of stageLinkSharing(i, ops, stageEnd, gradOverlap ? s.busy : [], shares, tpShare, p2p)) {
      dpDelay += x.sharedMs;
      computeDelay += x.computeDelayMs;
      noteSharing('overlapGradReduce', x.share, x.sharedMs, x.computeDelayMs);
    }
    const gather = stageParamGather(g, ops, o, (p) => sync(p, i).paramUs, gatherSlowdown, tpShare, inSchedule);
    paramGatherMs = Math.max(paramGatherMs, gather.exposedMs);
    paramGatherCostMs = Math.max(paramGatherCostMs, gather.overlapCostMs);
    let gatherShareMs = 0;
    if (gather.tpShare) {
      gatherShareMs = gather.tpShare.exposedMs;
      computeDelay += gather.tpShare.computeDelayMs;
      noteSharing(
        'overlapParamGather',
        shares.find((x) => x.with === 'tp')!,
        gather.tpShare.sharedMs,
        gather.tpShare.computeDelayMs,
      );
    }
    const doneCompute = stageEnd + computeDelay;
    const doneDp = s.endMs + Math.max(dpDelay, computeDelay);
    pipelineDone = Math.max(pipelineDone, doneCompute + gradCost, doneDp + gradCost + gatherShareMs);
    pipelineDoneNoCost = Math.max(pipelineDoneNoCost, doneCompute, doneDp + gatherShareMs);
    pipelineDoneUnshared = Math.max(pipelineDoneUnshared, stageEnd + gradCost, s.endMs + gradCost);
  });
  return {
    doneMs: pipelineDone,
    exposedMs: pipelineDoneNoCost - pipeline.spanMs,
    overlapCostMs: pipelineDone - pipelineDoneNoCost,
    buckets: dpBuckets,
    paramGatherMs,
    paramGatherCostMs,
    linkSharing: [...sharing.values()],
    linkSharingMs: pipelineDone - pipelineDoneUnshared,
    commMs,
  };
}

/**
 * A step's times and FLOPs from the simulated pipeline's columns (everything of assembleStep but
 * memory and the objects it returns), one term per parallel dimension: TP and CP exposure
 * (tpExposedMs, cpExposedMs), the pipeline's p2p (pipelineP2p), the gradient sync on each stage's
 * DP stream and the distributed optimizer's parameter all-gather (dataParallelTail), the
 * tied-embedding all-reduce, the finalize collectives and the optimizer:
 *   step = DP-stream end + embedding all-reduce + finalize + optimizer + param gather (+ its cost)
 *          + the weights' casts and amax all-reduce under a low-precision recipe (weightCastOf).
 */
export function stepTimes(
  setup: TrainingSetup,
  machine: Machine,
  pricing: LayerPricing,
  ct: ChunkTimes,
  input: P2pInput,
  pipeline: PipelineTimes,
) {
  const { system, dtype } = machine;
  const { pieces, ref } = pricing;
  const { c, deg, m, split, links, ring, model, rec } = ct;
  const pp = pipelineP2p(input.pipeIn, pipeline, input.p2pLossMs);
  const tpExposed = tpExposedMs(split, rec, pieces, m);
  const maxStageLayers = Math.max(...split.layers.map((row) => row.reduce((a, n) => a + n, 0)));
  const cpExposed = cpExposedMs(split, rec, ring, m);
  const dp = dataParallelTail(setup, machine, pricing, ct, input, pipeline);
  const distOpt = dpSharding(setup).optimizer;
  const embeddingAllReduceMs = tiedEmbeddingAllReduceMs(
    setup.tiedEmbeddings ?? false,
    deg.pp,
    c.vocab,
    model.embeddingParams,
    dtype,
    links.embedding,
    system,
  );
  // The SP norms' and MLA's duplicated down projections' (mla-step.ts mlaTpGradElements) gradients
  // all-reduced over TP in main_grad's format (finalize.ts).
  const mainGradBytes = setupStateBytes(setup, dtype, 1).grads;
  const mlaGradBytes = ct.mla ? maxStageLayers * ct.mla.tpGradElements * mainGradBytes : 0;
  const finalizeMs = finalizeTimeOf(pricing, maxStageLayers, machine, mainGradBytes, mlaGradBytes);
  const experts = ct.moe ? moeTail(setup, machine, ct.moe, ct.expertParams, ct.forwardMs, ct.backwardMs) : undefined;
  const expertMs = experts ? experts.gradSyncMs + experts.paramGatherMs : 0;
  // --optimizer-cpu-offload: the GPU steps its share, the host the rest (optimizer-offload.ts).
  const offload = setup.optimizerCpuOffload;
  // With quantized parameters the layers' weights (stageLayerParams) keep no 16-bit copy (optimizer.ts).
  const q = quantizedWeightsOf(setup, machine.kernels ?? defaultKernelOptions);
  const quantizedParams = q?.params ? split.layers.map((_, i) => stageLayerParams(ct, i)) : [];
  const optimizer =
    scaledKernelUs(
      system,
      'memory',
      optimizerMs(model.stageParams, distOpt, deg.dp * deg.cp, dtype, system.gpu, quantizedParams),
    ) *
      gpuOptimizerShare(setup) +
    (offload
      ? offloadedStepMs(Math.max(...model.stageParams) / (distOpt ? deg.dp * deg.cp : 1), offload, system).addedMs
      : 0) +
    (experts?.optimizerMs ?? 0);
  // Megatron-FSDP's ZeRO-2 gathers the stage's updated layers once after the optimizer (links/fsdp.ts).
  const fsdpSetup = setup.fsdp;
  const fsdpGatherMs = fsdpSetup
    ? Math.max(
        ...split.layers.map((row) =>
          fsdpGatherAfterStepMs(
            fsdpSetup,
            dtype,
            row.reduce((a, n) => a + n, 0) * model.layerParams,
            deg.dp * deg.cp,
            links.dpCp,
            system,
          ),
        ),
      )
    : 0;
  // The weights' casts and, with quantized parameters, the amax all-reduce before the master cast (quantized-params.ts).
  const weightCast = weightCastOf(setup, machine, ct);
  const stepMs =
    weightCast.castMs +
    weightCast.amaxReduceMs +
    dp.doneMs +
    embeddingAllReduceMs +
    finalizeMs +
    optimizer +
    dp.paramGatherMs +
    dp.paramGatherCostMs +
    expertMs +
    fsdpGatherMs;
  // A parameter gather in the schedule (dp-sync.ts gatherInSchedule) is what its waits add to the span.
  const gatherInScheduleMs = input.pipeIn.startDelayMs
    ? pipeline.spanMs -
      pipelineTimes({
        ...input.pipeIn,
        startDelayMs: undefined,
        startReadyMs: undefined,
        senderBusyMs: input.senderBusyMs,
      }).spanMs
    : 0;
  const paramGatherMs = dp.paramGatherMs + gatherInScheduleMs + fsdpGatherMs;

  const flops = stepFlops(ref, machine, setup.layers, rec, deg.dp, m);
  const moeFlops = ct.moe ? moeStepFlops(ct.moe, rec, deg.dp, m, ct.modules) : { model: 0, executed: 0 };
  const mlaFlops = mlaStepFlops(ct.mla, rec, setup.layers, deg.dp, m);
  const modelFlopsPerStep = flops.model + moeFlops.model + mlaFlops.model;
  const executedFlopsPerStep = flops.executed + moeFlops.executed + mlaFlops.executed;
  const tokensPerStep = deg.dp * m * setup.sizes.b * setup.sizes.s;
  const peak = mfuPeakFlops(machine);
  const dtypePeak = peakFlops(system.gpu, dtype);
  const tflopsPerGpu = modelFlopsPerStep / (setup.gpus * stepMs * 1e-3) / 1e12;

  const fsdpExposedMs = fsdpStageExposedMs(ct);
  const exposedByGroup: ExposedByGroup = {
    tp: tpExposed,
    cp: cpExposed,
    pp: pp.exposedMs,
    dp:
      dp.exposedMs +
      paramGatherMs +
      embeddingAllReduceMs +
      finalizeMs +
      expertMs +
      fsdpExposedMs +
      weightCast.amaxReduceMs,
  };
  const exposedMs = exposedByGroup.tp + exposedByGroup.cp + exposedByGroup.pp + exposedByGroup.dp;
  return {
    tpExposedMs: tpExposed,
    dpAllReduceMs: dp.exposedMs,
    dpBuckets: dp.buckets,
    paramGatherMs,
    paramGatherInScheduleMs: gatherInScheduleMs,
    embeddingAllReduceMs,
    finalizeMs,
    optimizerMs: optimizer,
    weightCast,
    dpCommMs: dp.commMs,
    stepMs,
    tokensPerStep,
    tokensPerS: tokensPerStep / (stepMs * 1e-3),
    modelFlopsPerStep,
    executedFlopsPerStep,
    tflopsPerGpu,
    mfu: modelFlopsPerStep / (setup.gpus * peak * stepMs * 1e-3),
    executedMfu: executedFlopsPerStep / (setup.gpus * peak * stepMs * 1e-3),
    trainDtypeMfu: modelFlopsPerStep / (setup.gpus * dtypePeak * stepMs * 1e-3),
    exposedByGroup,
    overlapCostMs: { dp: dp.overlapCostMs + dp.paramGatherCostMs, pp: pp.overlapCostMs },
    linkSharing: dp.linkSharing,
    linkSharingMs: dp.linkSharingMs,
    exposedMs,
    exposedShare: exposedMs / stepMs,
    moeTail: experts,
    fsdpExposedMs,
  };
}

/**
 * FSDP's per-unit collectives past the compute of the busiest stage in them, all micro-batches
 * (inside the chunks' times, chunk-times.ts): m · max_i Σ_c [n_ic · exposed per layer + the first
 * unit's forward and backward]; 0 without FSDP.
 */
function fsdpStageExposedMs(ct: ChunkTimes): number {
  const f = ct.fsdp;
  if (!f) return 0;
  const exposed = (x: typeof f, n: number): number =>
    n > 0 ? n * x.layerExposedMs + x.chunkForwardMs + x.chunkBackwardMs : 0;
  // With MoE, the expert units' collectives on the expert-DP link (chunk-times.ts fsdpExperts) in each MoE layer.
  const e = ct.fsdpExperts;
  const perStage = ct.split.layers.map((row, i) =>
    row.reduce((a, n, ch) => a + exposed(f, n) + (e ? exposed(e, ct.moe?.layersPerChunk[i]![ch] ?? 0) : 0), 0),
  );
  return ct.m * Math.max(...perStage);
}

/**
 * The dense peak MFU is taken against: that of the format the linear layers' GEMMs run in — fp8
 * under Transformer Engine's fp8 recipe (--fp8-format), fp4 under NVFP4 (--fp4-format), else the
 * training dtype. (Against the bf16 peak an fp8 run reads 105–116% on Blackwell: `trainDtypeMfu`
 * keeps that figure beside it.)
 */
export function mfuPeakFlops(machine: Machine): number {
  return gemmPeakFlops(machine.system.gpu, linearPrecisionOf(machine.kernels ?? defaultKernelOptions, machine.dtype));
}
