import type { TrainingSetup } from '../../megatron/training-setup.ts';
import { assembleStep, type StepProjection } from '../step/cluster-projection.ts';
import { chunkTimes } from '../step/chunk-times.ts';
import { priceLayers } from '../step/layer-pricing.ts';
import { mfuPeakFlops } from '../step/step-times.ts';
import { defaultKernelOptions, usesCudaGraphs } from '../layer/kernel-options.ts';
import { costUs, isPerStep, projectOps, type Machine } from '../layer/projected-layer.ts';
import { linearProducts } from '../layer/priced-ops.ts';
import { kernelModel } from '../../hardware/kernel-time.ts';
import { hostDispatchModel } from '../../hardware/host-dispatch.ts';

/**
 * One transformer layer's forward + backward for one micro-batch on one rank, ms, by what prices
 * it (projected-layer.ts): the kernels by model, the idle time eager dispatch leaves, what
 * collectives beside the kernels cost them, the TP communication the schedule leaves exposed.
 * `totalMs` is the scheduled layer (forward + backward); `otherMs` what the schedule adds beyond
 * the terms (a collective waiting on its inputs, rounding), so the terms add up to `totalMs`.
 */
export interface LayerTerms {
  /** The linear layers' GEMMs (qkv, proj, fc1, fc2: fprop, dgrad, wgrad), launch included. */
  readonly linearGemmMs: number;
  /** Their FLOPs over (their time · dense peak of their format, fp8's under the fp8 recipe): the GEMM model's efficiency at these shapes. */
  readonly linearGemmEfficiency: number;
  /** Attention: the s×s BMMs (unfused) or the FlashAttention kernels. */
  readonly attentionMs: number;
  /** Memory-bound kernels (norms, softmax, GeLU/SwiGLU, dropout, adds, bias gradients), launch included. */
  readonly memoryMs: number;
  readonly hostGapMs: number;
  readonly overlapCostMs: number;
  readonly tpExposedMs: number;
  readonly otherMs: number;
  readonly totalMs: number;
}

/**
 * A projected step cut into additive terms on its critical path (the busiest pipeline stage),
 * ms: step = layers + CP ring + recompute + embedding/output + bubble + dp + optimizer + finalize +
 * embedding all-reduce + param gather + overlap cost (outside the layer).
 */
export interface StepTerms {
  readonly stepMs: number;
  readonly layer: LayerTerms;
  /** Layers on the busiest stage × micro-batches: Σ n · (layer forward + backward) · m. */
  readonly layersMs: number;
  readonly layersOnStage: number;
  /**
   * Context parallelism's ring on the busiest stage, all micro-batches: the cp − 1 further K, V
   * blocks each layer's attention runs and the exchange they do not hide, forward and backward
   * (context-parallel.ts), m · n · (ring forward + ring backward). Recomputed forwards' rings are
   * recompute's.
   */
  readonly cpRingMs: number;
  /** Recomputed forwards on the busiest stage (all micro-batches). */
  readonly recomputeMs: number;
  /** Embedding, output layer and loss on the busiest stage (all micro-batches). */
  readonly embeddingOutputMs: number;
  /** The busiest stage's idle time in the simulated pipeline (bubble and p2p waits). */
  readonly bubbleMs: number;
  /** Gradient sync past the pipeline's end, plus what overlapped buckets cost the backward. */
  readonly dpGradMs: number;
  /** The distributed optimizer's parameter all-gather exposed, plus what the overlapped part costs the forward. */
  readonly paramGatherMs: number;
  readonly optimizerMs: number;
  /** The finalize collectives (SP norm gradients) and the tied-embedding all-reduce. */
  readonly finalizeMs: number;
  readonly microBatches: number;
  /** Executed FLOPs / (N · dense peak · step), and model FLOPs likewise (the GEMMs' format's peak). */
  readonly executedMfu: number;
  readonly mfu: number;
  /** Model FLOPs against the training dtype's peak. */
  readonly trainDtypeMfu: number;
}

/** The layer terms of `step`'s block plan (priced again with the same machine and the schedule's overlap). */
function layerTerms(step: StepProjection, pricing: Awaited<ReturnType<typeof priceLayers>>): LayerTerms {
  const machine = step.machine;
  const plan = pricing.block;
  const overlap = step.setup.overlap || (step.setup.overlapSpRegather ?? false);
  const ops = projectOps(plan, machine, overlap);
  const kernels = machine.kernels ?? defaultKernelOptions;
  const graphSaving = usesCudaGraphs(kernels) ? kernelModel.launchUs - hostDispatchModel.graphLaunchUs : 0;
  let linear = 0;
  let linearFlops = 0;
  let attention = 0;
  let memory = 0;
  for (const p of ops.priced) {
    const op = plan.ops[p.planIndex]!;
    if (isPerStep(op) || p.cost.kind === 'collective') continue;
    const us = costUs(p, op, machine).us - graphSaving;
    if (p.cost.kind === 'memory') memory += us;
    else if (p.cost.kind === 'flash') attention += us;
    else if (op.kind === 'gemm' && linearProducts.has(op.gemm.site.product)) {
      linear += us;
      linearFlops += p.cost.flops;
    } else attention += us;
  }
  const rank0 = (a: readonly (readonly number[])[]): readonly number[] => a[0]!;
  const sum = (a: readonly number[]): number => a.reduce((x, y) => x + y, 0);
  const hostGapMs = sum(ops.hostGapMs);
  const overlapCostMs = sum(ops.overlapCostMs);
  const computeMs = sum(rank0(ops.computeMs));
  const l = pricing.pieces.layer;
  const totalMs = l.forward.ms + l.backward.ms;
  const tpExposedMs = l.forward.exposedMs + l.backward.exposedMs;
  const peak = mfuPeakFlops(machine);
  return {
    linearGemmMs: linear / 1e3,
    linearGemmEfficiency: linear > 0 ? linearFlops / (linear * 1e-6 * peak) : 0,
    attentionMs: attention / 1e3,
    memoryMs: memory / 1e3,
    hostGapMs,
    overlapCostMs,
    tpExposedMs,
    otherMs: totalMs - computeMs - tpExposedMs,
    totalMs,
  };
}

/** Projects `setup` on `machine` and cuts the step into its terms (see StepTerms). */
export async function stepBreakdown(setup: TrainingSetup, machine: Machine): Promise<StepTerms> {
  const pricing = await priceLayers(setup, machine);
  const step = assembleStep(setup, machine, pricing);
  const layer = layerTerms(step, pricing);
  const { pipeline, split, microBatches: m } = step;
  const busiest = pipeline.busyMs.indexOf(Math.max(...pipeline.busyMs));
  const n = split.layers[busiest]!.reduce((a, x) => a + x, 0);
  const pieces = pricing.pieces;
  const first = busiest === 0;
  const last = busiest === split.layers.length - 1;
  const embOut =
    m *
    ((first ? pieces.embedding.forward.ms + pieces.embedding.backward.ms : 0) +
      (last ? pieces.output.forward.ms + pieces.output.backward.ms : 0));
  const layersMs = m * n * layer.totalMs;
  const { ring } = chunkTimes(setup, machine, pricing);
  const cpRingMs = m * n * (ring.forwardMs + ring.backwardMs);
  const busy = pipeline.busyMs[busiest]!;
  const dpGradMs = step.dpAllReduceMs + step.overlapCostMs.dp;
  return {
    stepMs: step.stepMs,
    layer,
    layersMs,
    layersOnStage: n,
    cpRingMs,
    recomputeMs: busy - layersMs - cpRingMs - embOut,
    embeddingOutputMs: embOut,
    // The parameter gather's waits in the schedule are its own term, not the bubble's.
    bubbleMs: pipeline.spanMs - busy - step.paramGatherInScheduleMs,
    dpGradMs,
    paramGatherMs: step.paramGatherMs,
    optimizerMs: step.optimizerMs,
    finalizeMs: step.finalizeMs + step.embeddingAllReduceMs,
    microBatches: m,
    executedMfu: step.executedMfu,
    mfu: step.mfu,
    trainDtypeMfu: step.trainDtypeMfu,
  };
}
