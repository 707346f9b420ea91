import type { CollectiveOp } from '../../comm/collectives.ts';
import { dtypeBytes } from '../../hardware/dtype.ts';
import { peakFlops } from '../../hardware/gpus.ts';
import { collectiveTimeUs } from '../../hardware/interconnect.ts';
import { memoryBoundUs } from '../../hardware/kernel-time.ts';
import { ncclFootprint, overlapLossMs, overlapSlowdown, p2pFootprint } from '../../hardware/overlap-cost.ts';
import { bytesPerElement } from '../../accounting/parameters.ts';
import type { GpuMemory } from '../../accounting/training-memory.ts';
import {
  checkDataParallelFlags,
  degreesOf,
  microBatchesOf,
  overlapsP2p,
  recomputeOf,
  setupConfig,
  type Degrees,
  type TrainingSetup,
} from '../../megatron/training-setup.ts';
import { configDefaults, type LayerConfig } from '../../parallel/config.ts';
import { makePlan } from '../../parallel/plan.ts';
import type { LayerPlan, PlannedOp } from '../../parallel/plan-types.ts';
import { defaultKernelOptions } from '../layer/kernel-options.ts';
import { modelGemmFlops } from '../layer/priced-ops.ts';
import { isPerStep, projectLayer, projectOps, tpGroupLink, type Machine } from '../layer/projected-layer.ts';
import type { Timeline } from '../../schedule/schedule.ts';
import { coreAttentionMs, isCoreAttention, ringAttention } from '../links/context-parallel.ts';
import {
  bucketSyncUs,
  defaultBucketSize,
  gradBuckets,
  gradSync,
  paramGatherExposedMs,
  stateBytes,
} from '../links/data-parallel.ts';
import { groupLinks, p2pUs } from '../links/group-links.ts';
import {
  stageMemory,
  stagePeakBytes,
  type MemoryClass,
  type StageAllocations,
  type StageMemory,
} from '../pipeline/memory-timeline.ts';
import { pipelineRun, pipelineTimes, type PipelineRun, type PipelineTimes } from '../pipeline/pipeline-schedule.ts';
import { holdsEmbedding, holdsOutput, splitLayers, type PipelineSplit } from '../pipeline/pipeline-split.ts';
import { chunkRecompute, type ChunkRecompute } from '../layer/recompute.ts';
import { overlapBuffers, type OverlapBuffer } from '../layer/overlap-buffers.ts';
import { overlapsOf } from '../layer/overlap-flags.ts';
import {
  dpSharedLinks,
  fairShareFinish,
  tpUnderSharing,
  type LinkSharingCost,
  type LinkTransfer,
} from '../links/link-sharing.ts';
import { stagePieces } from '../layer/stage-pieces.ts';
import { stageModel } from '../pipeline/stage-model.ts';

/** Exposed communication per process group, ms per step (the slowest stage's). */
export interface ExposedByGroup {
  readonly tp: number;
  readonly cp: number;
  /** Pipeline p2p: how much the sends lengthen the simulated schedule. */
  readonly pp: number;
  /** Gradient sync past the last backward, the distributed optimizer's parameter all-gather, tied-embedding all-reduce. */
  readonly dp: number;
}

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
  /** Tied embeddings with p > 1: the embedding-gradient all-reduce between the first and last stage. */
  readonly embeddingAllReduceMs: number;
  /** Once-per-step collectives of the plan's finalize phase, coalesced over layers. */
  readonly finalizeMs: number;
  /** Adam update (memory-bound) of this GPU's parameters (its shard with the distributed optimizer). */
  readonly optimizerMs: number;
  readonly stepMs: number;
  readonly tokensPerStep: number;
  readonly tokensPerS: number;
  /** GEMM FLOPs of the model (TP = 1 shapes, forward + backward, once) per step, all GPUs. */
  readonly modelFlopsPerStep: number;
  /** Model FLOPs plus the recomputed forwards (what the GPUs execute). */
  readonly executedFlopsPerStep: number;
  readonly tflopsPerGpu: number;
  /** Model FLOPs / (N · dense peak · step). */
  readonly mfu: number;
  /** Executed FLOPs / (N · dense peak · step) (hardware FLOPs utilization). */
  readonly executedMfu: number;
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
  /** Parameters each stage holds (its TP shard). */
  readonly stageParams: readonly number[];
}

/** The two plans of a configuration: with the vocabulary (one block inside) and the block alone. */
export type LayerPlans = { readonly full: LayerPlan; readonly block: LayerPlan };

/** The two plans of a configuration (LayerPlans). */
export async function plans(c: LayerConfig): Promise<LayerPlans> {
  const full = (await makePlan(c)).plan;
  const block = c.vocab > 0 ? (await makePlan({ ...c, vocab: 0 })).plan : full;
  return { full, block };
}

/** GEMM FLOPs of the plan's ops (one rank), optionally only those `keep` selects. */
const gemmFlops = (p: LayerPlan, keep: (o: LayerPlan['ops'][number]) => boolean = () => true): number =>
  p.ops.reduce((a, o) => a + (o.kind === 'gemm' && keep(o) ? o.gemm.flops : 0), 0);

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

/**
 * What a step's layers cost on a machine, independent of depth, degrees other than t and cp,
 * batch and recompute: the two plans one rank runs (with the vocabulary, and one block alone)
 * scheduled with projected kernels and TP links, their pieces, core attention's time, and the
 * TP = 1 GEMM FLOPs. Setups with the same sizes, micro-batch, t, SP, cp and overlap on the same
 * machine share it (the advisor caches it: planning and scheduling the layer is the expensive
 * part of a step).
 */
export interface LayerPricing {
  readonly full: LayerPlan;
  readonly block: LayerPlan;
  readonly fullT: Timeline;
  readonly blockT: Timeline;
  readonly pieces: ReturnType<typeof stagePieces>;
  readonly core: ReturnType<typeof coreAttentionMs>;
  /** The TP = 1, full-sequence plans (model FLOPs). */
  readonly ref: { readonly full: LayerPlan; readonly block: LayerPlan };
}

/**
 * Which TP ranks a pricing schedules: `all` (the timelines the page draws) or `first`, rank 0
 * alone. The two give the same step, exposed time and memory: projectOps prices every rank's op
 * alike (the ranks run the same shapes) and a collective's transfer is the slowest member's, so
 * rank 0's timeline is every rank's; `first` costs 1/t of the scheduling.
 */
export type PricedRanks = 'all' | 'first';

/**
 * The model-FLOP plans of `setup`'s sizes: TP = 1, the full sequence (no CP), no SP. They depend
 * on the sizes and micro-batch alone, so a search shares them across t and cp.
 */
export function referencePlans(setup: TrainingSetup): Promise<LayerPricing['ref']> {
  return plans({ ...configDefaults, ...setup.sizes, tp: 1, sp: false });
}

/** Prices the layer of `setup` on `machine` (the part of a step planning and scheduling give). */
export async function priceLayers(
  setup: TrainingSetup,
  machine: Machine,
  ranks: PricedRanks = 'all',
  reference?: Promise<LayerPricing['ref']>,
  planned0?: Promise<LayerPlans>,
): Promise<LayerPricing> {
  const c = setupConfig(setup);
  const planned = await (planned0 ?? plans(c));
  const async = asyncCollectives(setup);
  const only = (p: LayerPlan): LayerPlan =>
    withAsync(ranks === 'all' ? p : { ...p, ranks: p.ranks.slice(0, 1) }, async);
  const full = only(planned.full);
  const block = planned.block === planned.full ? full : only(planned.block);
  const overlap = async.dgrad || async.regather;
  const fullT = projectLayer(full, machine, overlap);
  const blockT = full === block ? fullT : projectLayer(block, machine, overlap);
  const pieces = stagePieces(full, fullT, block, blockT);
  const core = coreAttentionMs(block, projectOps(block, machine));
  return { full, block, fullT, blockT, pieces, core, ref: await (reference ?? referencePlans(setup)) };
}

/** Which of the plan's asynchronous collectives `setup` issues asynchronously: the dgrad reduces and the SP re-gathers. */
const asyncCollectives = (setup: TrainingSetup): { dgrad: boolean; regather: boolean } => ({
  dgrad: setup.overlap,
  regather: setup.overlapSpRegather ?? setup.overlap,
});

/** True for the SP re-gather of a column-parallel linear's input (the plan's one asynchronous all-gather). */
const isRegather = (op: PlannedOp): boolean => op.kind === 'collective' && op.collective.op === 'allGather';

/**
 * The plan with the asynchronous collectives `async` leaves out made synchronous (the plan marks
 * both kinds async; the schedule's overlap option then holds for the rest).
 */
function withAsync(plan: LayerPlan, async: { dgrad: boolean; regather: boolean }): LayerPlan {
  if (async.dgrad === async.regather) return plan;
  const keep = (op: PlannedOp): boolean => (isRegather(op) ? async.regather : async.dgrad);
  return {
    ...plan,
    ops: plan.ops.map((op) =>
      op.kind === 'collective' && op.overlap.async && !keep(op)
        ? { ...op, overlap: { ...op.overlap, async: false } }
        : op,
    ),
  };
}

/** stageModel per pricing, by what it reads besides the plans (the split, dtype, tied, flash): exact reuse. */
const stageModels = new WeakMap<LayerPricing, Map<string, ReturnType<typeof stageModel>>>();

function stageModelOf(
  pricing: LayerPricing,
  split: PipelineSplit,
  machine: Machine,
  setup: TrainingSetup,
): ReturnType<typeof stageModel> {
  let byKey = stageModels.get(pricing);
  if (!byKey) stageModels.set(pricing, (byKey = new Map()));
  const { dtype } = machine;
  const arch = (machine.kernels ?? defaultKernelOptions).arch;
  const key = `${split.layers.map((row) => row.join(',')).join(';')}|${dtype}|${setup.tiedEmbeddings ?? false}|${setup.flashAttention ?? false}|${arch}|${setup.sizes.s}`;
  let model = byKey.get(key);
  if (!model) byKey.set(key, (model = stageModel(pricing.full, pricing.block, split, dtype, setup, arch)));
  return model;
}

/**
 * chunkTimes per setup, for the machine and pricing it was computed with: the advisor bounds a
 * candidate (stepLowerBounds) and then assembles it with the same three objects; exact reuse.
 */
const chunkTimesMemo = new WeakMap<
  TrainingSetup,
  { machine: Machine; pricing: LayerPricing; value: ReturnType<typeof computeChunkTimes> }
>();

/**
 * The fields of a setup computeChunkTimes reads only through setupConfig's checkDataParallelFlags:
 * setups that differ in nothing else (a search's optimizer and overlap flags) share their chunk times.
 */
const dataParallelFlags: ReadonlySet<string> = new Set<keyof TrainingSetup>([
  'distributedOptimizer',
  'overlapGradReduce',
  'overlapParamGather',
  'bucketSize',
]);

/** computeChunkTimes per pricing, machine and setup less its data-parallel flags. */
const chunkTimesShared = new WeakMap<
  LayerPricing,
  WeakMap<Machine, Map<string, ReturnType<typeof computeChunkTimes>>>
>();

/**
 * computeChunkTimes, remembered for the last (machine, pricing) each setup object was priced with,
 * and shared by setups equal but for their data-parallel flags (whose own rules are still checked).
 */
function chunkTimes(setup: TrainingSetup, machine: Machine, pricing: LayerPricing) {
  const hit = chunkTimesMemo.get(setup);
  if (hit && hit.machine === machine && hit.pricing === pricing) return hit.value;
  let byMachine = chunkTimesShared.get(pricing);
  if (!byMachine) chunkTimesShared.set(pricing, (byMachine = new WeakMap()));
  let byKey = byMachine.get(machine);
  if (!byKey) byMachine.set(machine, (byKey = new Map()));
  const key = JSON.stringify(setup, (k: string, v: unknown) => (dataParallelFlags.has(k) ? undefined : v));
  let value = byKey.get(key);
  if (value) checkDataParallelFlags(setup);
  else byKey.set(key, (value = computeChunkTimes(setup, machine, pricing)));
  chunkTimesMemo.set(setup, { machine, pricing, value });
  return value;
}

/** Each chunk's compute per micro-batch (forward; backward with the recomputed forward) and what it reads. */
function computeChunkTimes(setup: TrainingSetup, machine: Machine, pricing: LayerPricing) {
  const c = setupConfig(setup);
  const deg = degreesOf(setup);
  const { system, dtype } = machine;
  const m = microBatchesOf(setup);
  const rc = recomputeOf(setup);
  const split = splitLayers(setup.layers, deg.pp, deg.vpp, {
    first: setup.firstStageLayers,
    last: setup.lastStageLayers,
  });
  const { block, pieces, core } = pricing;
  const links = machine.placed ?? groupLinks(system, deg);
  const bytes = dtypeBytes[dtype];

  // Context parallelism: the ring exchange of K, V per layer.
  const own = block.ranks[0]!;
  const kvBytes = 2 * c.s * c.b * own.kvGroups.length * (c.h / c.heads) * bytes;
  const ring = ringAttention(deg.cp, core, kvBytes, links.cp, system);

  const model = stageModelOf(pricing, split, machine, setup);
  const rec: ChunkRecompute[][] = split.layers.map((row) => row.map((n) => chunkRecompute(n, model.layer, rc)));
  const layerF = pieces.layer.forward.ms + ring.forwardMs;
  const layerB = pieces.layer.backward.ms + ring.backwardMs;
  const coreF = deg.cp * core.forwardMs + (ring.forwardMs - (deg.cp - 1) * core.forwardMs);
  const forwardMs = (i: number, ch: number): number =>
    split.layers[i]![ch]! * layerF +
    (holdsEmbedding(i, ch) ? pieces.embedding.forward.ms : 0) +
    (holdsOutput(split, i, ch) ? pieces.output.forward.ms : 0);
  const redoMs = (i: number, ch: number): number =>
    rec[i]![ch]!.recomputedLayers * layerF + rec[i]![ch]!.recomputedCoreAttention * coreF;
  const backwardMs = (i: number, ch: number): number =>
    split.layers[i]![ch]! * layerB +
    redoMs(i, ch) +
    (holdsEmbedding(i, ch) ? pieces.embedding.backward.ms : 0) +
    (holdsOutput(split, i, ch) ? pieces.output.backward.ms : 0);
  return { c, deg, m, rc, split, links, bytes, own, ring, model, rec, layerF, layerB, forwardMs, backwardMs, redoMs };
}

/** Lower bounds of a step's time and its peak memory per GPU (see stepLowerBounds). */
export interface StepLowerBounds {
  readonly stepMs: number;
  readonly memoryBytes: number;
}

/**
 * Lower bounds of assembleStep(setup, machine, pricing)'s step time and peak memory, at a fraction
 * of its cost. Time: the busiest stage's compute, m · max_i Σ_c (forward + backward of chunk c on
 * stage i): the pipeline simulation runs a stage's ops one after another, so its span is at least
 * that, and the step adds the gradient sync's tail, the optimizer and the rest. Memory: the
 * heaviest stage's weights, optimizer state (its shard with the distributed optimizer) and
 * gradient buffer, live for the whole step under every peak.
 */
export function stepLowerBounds(setup: TrainingSetup, machine: Machine, pricing: LayerPricing): StepLowerBounds {
  const { m, deg, split, model, forwardMs, backwardMs } = chunkTimes(setup, machine, pricing);
  let busiest = 0;
  split.layers.forEach((row, i) => {
    busiest = Math.max(
      busiest,
      row.reduce((a, _, ch) => a + forwardMs(i, ch) + backwardMs(i, ch), 0),
    );
  });
  const per = stateBytes(machine.dtype, setup.distributedOptimizer ?? false, deg.dp * deg.cp);
  const memoryBytes = Math.max(...model.stageParams) * (per.weights + per.optimizer + per.grads);
  return { stepMs: m * busiest, memoryBytes };
}

type ChunkTimes = ReturnType<typeof computeChunkTimes>;

/**
 * The pipeline simulation's input for `setup`: p2p of the activation (or its gradient) across a
 * stage boundary, [s/(t·cp), b, h] with SP, [s/cp, b, h] without, on the boundary's link; a send
 * blocks its sender (1F1B) or runs beside its next op and slows it (overlap_p2p_comm).
 */
function pipelineInput(setup: TrainingSetup, machine: Machine, ct: ChunkTimes) {
  const { system } = machine;
  const { c, deg, m, links, bytes, own, forwardMs, backwardMs } = ct;
  const p2pBytes = (own.tokens[1] - own.tokens[0]) * c.b * c.h * bytes;
  const p2pMs = deg.pp > 1 ? p2pUs(system, links.pp, p2pBytes) / 1e3 : 0;
  const p2pOverlapped = overlapsP2p(setup) && deg.pp > 1;
  const p2pLossMs = p2pOverlapped
    ? overlapLossMs(p2pMs, overlapSlowdown(false, system.gpu, p2pFootprint(links.pp.busGBps)))
    : 0;
  const pipeIn = { p: deg.pp, v: deg.vpp, m, forwardMs, backwardMs, p2pMs };
  return { pipeIn, senderBusyMs: p2pOverlapped ? p2pLossMs : p2pMs, p2pLossMs, p2pBlocks: !p2pOverlapped };
}

/**
 * What stage i allocates, by lifetime (memory-timeline.ts): its weights, main weights and Adam
 * moments (a 1/(DP·cp) shard with the distributed optimizer) and what the overlaps hold,
 * resident; the gradient buffer per step; per micro-batch each chunk's kept activations (plus
 * the embedding's and the output's on the end stages); the recompute unit during a backward;
 * the logits and the fp32 softmax of cross entropy on the last stage.
 */
function stageAllocations(
  setup: TrainingSetup,
  machine: Machine,
  ct: ChunkTimes,
): { buffers: OverlapBuffer[]; of: (i: number) => StageAllocations } {
  const { system, dtype } = machine;
  const { deg, split, own, model, rec } = ct;
  const dpGroup = deg.dp * deg.cp;
  const distOpt = setup.distributedOptimizer ?? false;
  const per = stateBytes(dtype, distOpt, dpGroup);
  const kernels = machine.kernels ?? defaultKernelOptions;
  const buffers = overlapBuffers(
    overlapsOf(setup, kernels),
    setup,
    kernels,
    dtype,
    system.gpu,
    own.tokens[1] - own.tokens[0],
  );
  const of = (i: number): StageAllocations => ({
    resident: [
      { label: 'weights', bytes: model.stageParams[i]! * per.weights },
      {
        label: distOpt ? `main weights and Adam moments (1/${dpGroup} shard)` : 'main weights and Adam moments',
        bytes: model.stageParams[i]! * per.optimizer,
      },
      ...buffers.filter((b) => b.bytes > 0).map((b) => ({ label: b.label, bytes: b.bytes })),
    ],
    perStep: [{ label: 'gradient buffer', bytes: model.stageParams[i]! * per.grads }],
    keptBytes: (ch) =>
      rec[i]![ch]!.keptBytes +
      (holdsEmbedding(i, ch) ? model.embeddingActivation : 0) +
      (holdsOutput(split, i, ch) ? model.outputActivation : 0),
    backwardTransientBytes: (ch) => rec[i]![ch]!.backwardTransientBytes,
    forwardTransientBytes: (ch) => (holdsOutput(split, i, ch) ? model.logitsForward : 0),
    lossBytes: (ch) => (holdsOutput(split, i, ch) ? model.lossSoftmax : 0),
  });
  return { buffers, of };
}

/** What the advisor ranks a step by, each exactly as assembleStep has it (plain data). */
export interface StepSummary {
  readonly microBatches: number;
  readonly stepMs: number;
  readonly tokensPerS: number;
  readonly tflopsPerGpu: number;
  readonly mfu: number;
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
    exposedShare: t.exposedShare,
    memoryBytes,
    capacityBytes,
  };
}

/**
 * A step's times and FLOPs from the simulated pipeline's columns (everything of assembleStep but
 * memory and the objects it returns): TP and CP exposure, the gradient sync on each stage's DP
 * stream, the tied-embedding all-reduce, the finalize collectives, the optimizer and the
 * distributed optimizer's parameter all-gather.
 */
function stepTimes(
  setup: TrainingSetup,
  machine: Machine,
  pricing: LayerPricing,
  ct: ChunkTimes,
  input: ReturnType<typeof pipelineInput>,
  pipeline: PipelineTimes,
) {
  const { system, dtype } = machine;
  const L = setup.layers;
  const { pieces, ref } = pricing;
  const { c, deg, m, split, links, ring, model, rec } = ct;
  const { pipeIn, p2pLossMs } = input;
  // Only their spans count: the schedule without p2p, and with p2p but without its cost to compute.
  const noP2p = deg.pp > 1 ? pipelineTimes({ ...pipeIn, p2pMs: 0 }) : pipeline;
  const noP2pCost = p2pLossMs > 0 ? pipelineTimes(pipeIn) : pipeline;

  // TP and CP exposure per stage over the step.
  const stageExposed = split.layers.map((row, i) =>
    row.reduce((a, n, ch) => {
      const r = rec[i]![ch]!;
      return (
        a +
        n * (pieces.layer.forward.exposedMs + pieces.layer.backward.exposedMs) +
        r.recomputedLayers * pieces.layer.forward.exposedMs +
        (holdsEmbedding(i, ch) ? pieces.embedding.forward.exposedMs + pieces.embedding.backward.exposedMs : 0) +
        (holdsOutput(split, i, ch) ? pieces.output.forward.exposedMs + pieces.output.backward.exposedMs : 0)
      );
    }, 0),
  );
  const tpExposedMs = m * Math.max(...stageExposed);
  const maxStageLayers = Math.max(...split.layers.map((row) => row.reduce((a, n) => a + n, 0)));
  // CP: every layer's exchange, plus the forward exchange again where full recompute re-runs a layer.
  const cpExposedMs =
    m *
    Math.max(
      ...split.layers.map((row, i) =>
        row.reduce((a, n, ch) => a + n * ring.exposedMs + rec[i]![ch]!.recomputedLayers * ring.exposedForwardMs, 0),
      ),
    );

  // Data parallelism on each stage's DP stream.
  const dpGroup = deg.dp * deg.cp;
  const distOpt = setup.distributedOptimizer ?? false;
  const bucketSize = setup.bucketSize ?? defaultBucketSize(deg.dp);
  const sync = (params: number) => bucketSyncUs(params, dtype, distOpt, dpGroup, links.dpCp, system);
  // What the DP collectives beside compute cost it (NCCL's SMs; backward and forward taken as GEMM-bound).
  const dpSlowdown = (op: 'allReduce' | 'reduceScatter' | 'allGather'): number =>
    overlapSlowdown(false, system.gpu, ncclFootprint(op, links.dpCp));
  const gradSlowdown = dpSlowdown(distOpt ? 'reduceScatter' : 'allReduce');
  const gatherSlowdown = dpSlowdown('allGather');
  // Links the overlapped DP collectives share with TP or pipeline traffic (link-sharing.ts).
  const gradOverlap = (setup.overlapGradReduce ?? false) && dpGroup > 1;
  const gatherOverlap = (setup.overlapParamGather ?? false) && distOpt && dpGroup > 1;
  const shares = gradOverlap || gatherOverlap ? dpSharedLinks(machine, deg) : [];
  const tpShare = shares.some((x) => x.with === 'tp')
    ? tpUnderSharing(pricing, machine, deg, setup.overlap || (setup.overlapSpRegather ?? setup.overlap))
    : undefined;
  const sharing = new Map<string, { -readonly [K in keyof LinkSharingCost]: LinkSharingCost[K] }>();
  const noteSharing = (
    overlap: LinkSharingCost['overlap'],
    sh: (typeof shares)[number],
    sharedMs: number,
    computeDelayMs: number,
  ): void => {
    const key = `${overlap}|${sh.with}`;
    const x = sharing.get(key) ?? { overlap, with: sh.with, link: sh.link, sharedMs: 0, computeDelayMs: 0 };
    x.sharedMs = Math.max(x.sharedMs, sharedMs);
    x.computeDelayMs = Math.max(x.computeDelayMs, computeDelayMs);
    sharing.set(key, x);
  };
  let pipelineDoneUnshared = 0;
  let dpBuckets = 0;
  let pipelineDone = 0;
  let pipelineDoneNoCost = 0;
  let paramGatherMs = 0;
  let paramGatherCostMs = 0;
  split.layers.forEach((row, i) => {
    const order = pipeline.orders[i]!;
    const t0 = pipeline.t0[i]!;
    const t1 = pipeline.t1[i]!;
    let stageEnd = 0;
    for (const x of t1) stageEnd = Math.max(stageEnd, x);
    // The last backward of each chunk and the stage's first forward (op indices, −1: none).
    const lastBackward = new Array<number>(row.length).fill(-1);
    let first = -1;
    for (let j = 0; j < order.chunk.length; j++)
      if (!order.forward[j]) lastBackward[order.chunk[j]!] = j;
      else if (first < 0) first = j;
    const chunks = row.map((_, ch) => {
      const b = lastBackward[ch]!;
      const buckets = gradBuckets(model.chunkParams[i]![ch]!, {
        overlapGradReduce: setup.overlapGradReduce ?? false,
        stage: i,
        chunk: ch,
        bucketSize,
      });
      return { buckets, lastBackward: b >= 0 ? { t0: t0[b]!, t1: t1[b]! } : { t0: stageEnd, t1: stageEnd } };
    });
    const s = gradSync(chunks, setup.overlapGradReduce ?? false, (p) => (dpGroup > 1 ? sync(p).gradUs : 0), stageEnd);
    if (dpGroup > 1) dpBuckets = Math.max(dpBuckets, s.buckets);
    // With --overlap-grad-reduce the buckets that run before the last backward ends slow it.
    const gradCost =
      (setup.overlapGradReduce ?? false) && dpGroup > 1
        ? overlapLossMs(Math.max(0, s.commMs - s.exposedMs), gradSlowdown)
        : 0;
    // Sharing a link (max-min fair share, link-sharing.ts's fairShareFinish), on the unshared
    // schedule: each busy stretch of the DP stream before the stage's end (buckets back to back,
    // len ms) is one transfer. TP on the link: its collectives in that stretch are len·uB of link
    // time issued with it, and the backward under it runs at the layer re-scheduled with the TP
    // link at C/2 (len·slowB later, after what still hides). Pipeline on the link: each p2p that
    // meets the stretch (a backward's receive before it, its send after it) is a transfer of p2p
    // ms; a receive's delay holds the op that needs it, a blocking send's (1F1B) its sender.
    let computeDelay = 0;
    let dpDelay = 0;
    const stretches = gradOverlap
      ? s.busy.flatMap((b) => (b.t0 < stageEnd ? [{ t0: b.t0, t1: Math.min(b.t1, stageEnd) }] : []))
      : [];
    for (const sh of shares) {
      let shared = 0;
      let delay = 0;
      for (const b of stretches) {
        const len = b.t1 - b.t0;
        // Below 1e-9 of the stage's span it is rounding (a single bucket issued at the end).
        if (len <= 1e-9 * stageEnd) continue;
        const partner: { x: LinkTransfer; holds: boolean }[] = [];
        if (sh.with === 'tp' && tpShare) {
          partner.push({ x: { startMs: b.t0, aloneMs: len * tpShare.uB }, holds: false });
          delay += len * tpShare.slowB;
        } else if (sh.with === 'pp')
          for (let j = 0; j < order.chunk.length; j++) {
            if (order.forward[j]) continue;
            const ch = order.chunk[j]!;
            const p2p: { x: LinkTransfer; holds: boolean }[] = [];
            if (!(i === deg.pp - 1 && ch === deg.vpp - 1))
              p2p.push({ x: { startMs: t0[j]! - pipeIn.p2pMs, aloneMs: pipeIn.p2pMs }, holds: true });
            if (!(i === 0 && ch === 0))
              p2p.push({ x: { startMs: t1[j]!, aloneMs: pipeIn.p2pMs }, holds: input.p2pBlocks });
            for (const q of p2p) if (q.x.startMs < b.t1 && q.x.startMs + q.x.aloneMs > b.t0) partner.push(q);
          }
        if (!partner.length) continue;
        const done = fairShareFinish([{ startMs: b.t0, aloneMs: len }, ...partner.map((q) => q.x)]);
        shared += done[0]! - b.t1;
        partner.forEach((q, k) => {
          if (q.holds) delay += done[k + 1]! - q.x.startMs - q.x.aloneMs;
        });
      }
      if (shared <= 0 && delay <= 0) continue;
      dpDelay += shared;
      computeDelay += delay;
      noteSharing('overlapGradReduce', sh, shared, delay);
    }
    let gatherShareMs = 0;
    if (distOpt && dpGroup > 1) {
      const gather = chunks.flatMap((ch) => ch.buckets.map((p) => sync(p).paramUs / 1e3));
      const ex = paramGatherExposedMs(
        gather,
        setup.overlapParamGather ?? false,
        first >= 0 ? t0[first]! : 0,
        first >= 0 ? t1[first]! - t0[first]! : 0,
      );
      paramGatherMs = Math.max(paramGatherMs, ex);
      // With --overlap-param-gather the part hidden past the warm-up idle time runs under the first forward.
      if (setup.overlapParamGather && first >= 0) {
        const forwardMs = t1[first]! - t0[first]!;
        const hidden = gather.reduce((a, x) => a + x, 0) - ex;
        const underForward = Math.min(forwardMs, Math.max(0, hidden - t0[first]!));
        paramGatherCostMs = Math.max(paramGatherCostMs, overlapLossMs(underForward, gatherSlowdown));
        // Beside TP on a shared link: that forward runs at its half-link time (G·slowF later) and the
        // TP collectives take G·uF of link time from the gather, exposed where it runs past the forward.
        if (tpShare) {
          const shared = underForward * tpShare.uF;
          gatherShareMs = Math.max(0, underForward + shared - forwardMs);
          computeDelay += underForward * tpShare.slowF;
          noteSharing('overlapParamGather', shares.find((x) => x.with === 'tp')!, shared, underForward * tpShare.slowF);
        }
      }
    }
    const doneCompute = stageEnd + computeDelay;
    const doneDp = s.endMs + Math.max(dpDelay, computeDelay);
    pipelineDone = Math.max(pipelineDone, doneCompute + gradCost, doneDp + gradCost + gatherShareMs);
    pipelineDoneNoCost = Math.max(pipelineDoneNoCost, doneCompute, doneDp + gatherShareMs);
    pipelineDoneUnshared = Math.max(pipelineDoneUnshared, stageEnd + gradCost, s.endMs + gradCost);
  });
  const dpAllReduceMs = pipelineDoneNoCost - pipeline.spanMs;
  const gradCostMs = pipelineDone - pipelineDoneNoCost;

  const tied = setup.tiedEmbeddings ?? false;
  const embeddingAllReduceMs =
    tied && deg.pp > 1 && c.vocab > 0
      ? (system.collectiveBaseUs +
          collectiveTimeUs(
            'allReduce',
            model.embeddingParams * stateBytes(dtype, false, 1).grads,
            2,
            links.embedding,
          )) /
        1e3
      : 0;
  const finalizeMs = finalizeTimeOf(pricing, maxStageLayers, machine);
  const maxParams = Math.max(...model.stageParams);
  const shard = distOpt ? maxParams / dpGroup : maxParams;
  const base = stateBytes(dtype, false, 1);
  const optimizerMs = memoryBoundUs(shard * (2 * (base.optimizer + base.weights) + base.grads), system.gpu) / 1e3;
  const stepMs = pipelineDone + embeddingAllReduceMs + finalizeMs + optimizerMs + paramGatherMs + paramGatherCostMs;

  // FLOPs: the model's once (TP = 1, full sequence), executed adds the recomputed forwards.
  // Model FLOPs of the transformed op list (priced-ops.ts: GPT has no gate GEMMs).
  const { full: fullFlops, block: blockFlops, fwdLayer, fwdCore } = referenceFlops(ref, machine);
  const perMicroBatch = fullFlops + (L - 1) * blockFlops;
  const redoFlops = rec
    .flat()
    .reduce((a, r) => a + r.recomputedLayers * fwdLayer + r.recomputedCoreAttention * fwdCore, 0);
  const replicas = deg.dp;
  const modelFlopsPerStep = replicas * m * perMicroBatch;
  const executedFlopsPerStep = replicas * m * (perMicroBatch + redoFlops);
  const tokensPerStep = replicas * m * setup.sizes.b * setup.sizes.s;
  const peak = peakFlops(system.gpu, dtype);
  const tflopsPerGpu = modelFlopsPerStep / (setup.gpus * stepMs * 1e-3) / 1e12;

  const exposedByGroup: ExposedByGroup = {
    tp: tpExposedMs,
    cp: cpExposedMs,
    pp: noP2pCost.spanMs - noP2p.spanMs,
    dp: dpAllReduceMs + paramGatherMs + embeddingAllReduceMs + finalizeMs,
  };
  const exposedMs = exposedByGroup.tp + exposedByGroup.cp + exposedByGroup.pp + exposedByGroup.dp;
  return {
    tpExposedMs,
    dpAllReduceMs,
    dpBuckets,
    paramGatherMs,
    embeddingAllReduceMs,
    finalizeMs,
    optimizerMs,
    stepMs,
    tokensPerStep,
    tokensPerS: tokensPerStep / (stepMs * 1e-3),
    modelFlopsPerStep,
    executedFlopsPerStep,
    tflopsPerGpu,
    mfu: modelFlopsPerStep / (setup.gpus * peak * stepMs * 1e-3),
    executedMfu: executedFlopsPerStep / (setup.gpus * peak * stepMs * 1e-3),
    exposedByGroup,
    overlapCostMs: { dp: gradCostMs + paramGatherCostMs, pp: pipeline.spanMs - noP2pCost.spanMs },
    linkSharing: [...sharing.values()],
    linkSharingMs: pipelineDone - pipelineDoneUnshared,
    exposedMs,
    exposedShare: exposedMs / stepMs,
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
  const per = stateBytes(dtype, setup.distributedOptimizer ?? false, dpGroup);
  const { buffers, of: allocations } = stageAllocations(setup, machine, ct);
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
    embeddingAllReduceMs: t.embeddingAllReduceMs,
    finalizeMs: t.finalizeMs,
    optimizerMs: t.optimizerMs,
    stepMs: t.stepMs,
    tokensPerStep: t.tokensPerStep,
    tokensPerS: t.tokensPerS,
    modelFlopsPerStep: t.modelFlopsPerStep,
    executedFlopsPerStep: t.executedFlopsPerStep,
    tflopsPerGpu: t.tflopsPerGpu,
    mfu: t.mfu,
    executedMfu: t.executedMfu,
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
  };
}

/** Live bytes per lifetime class at the peak stage's peak. */
export const memoryAtPeak = (p: StepProjection): Readonly<Record<MemoryClass, number>> =>
  p.stageMemory.reduce((a, s) => (s.peakBytes > a.peakBytes ? s : a)).atPeak;

/** FLOPs of the reference plans on a machine: model FLOPs with and without the vocabulary, forward layer, forward core attention. */
interface ReferenceFlops {
  readonly full: number;
  readonly block: number;
  readonly fwdLayer: number;
  readonly fwdCore: number;
}

/** ReferenceFlops per reference plans and machine (they read only the plans, dtype and kernels): exact reuse. */
const referenceFlopsMemo = new WeakMap<LayerPricing['ref'], WeakMap<Machine, ReferenceFlops>>();

function referenceFlops(ref: LayerPricing['ref'], machine: Machine): ReferenceFlops {
  let byMachine = referenceFlopsMemo.get(ref);
  if (!byMachine) referenceFlopsMemo.set(ref, (byMachine = new WeakMap()));
  let x = byMachine.get(machine);
  if (!x) {
    const flops = (p: LayerPlan): number => modelGemmFlops(p, machine.dtype, machine.kernels ?? defaultKernelOptions);
    x = {
      full: flops(ref.full),
      block: flops(ref.block),
      fwdLayer: gemmFlops(ref.block, (o) => o.phase === 'forward'),
      fwdCore: gemmFlops(ref.block, (o) => o.phase === 'forward' && isCoreAttention(o)),
    };
    byMachine.set(machine, x);
  }
  return x;
}

/** finalizeTime per pricing, machine and layer count: exact reuse. */
const finalizeMemo = new WeakMap<LayerPricing, WeakMap<Machine, Map<number, number>>>();

function finalizeTimeOf(pricing: LayerPricing, L: number, machine: Machine): number {
  let byMachine = finalizeMemo.get(pricing);
  if (!byMachine) finalizeMemo.set(pricing, (byMachine = new WeakMap()));
  let byL = byMachine.get(machine);
  if (!byL) byMachine.set(machine, (byL = new Map()));
  let ms = byL.get(L);
  if (ms === undefined) byL.set(L, (ms = finalizeTime(pricing.full, pricing.block, L, machine)));
  return ms;
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
    const link = machine.placed?.tp ?? tpGroupLink(system, group);
    ms += (system.collectiveBaseUs + collectiveTimeUs(op, bytes, group, link)) / 1e3;
  }
  return ms;
}

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
