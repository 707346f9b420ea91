import { dtypeBytes } from '../../hardware/dtype.ts';
import { commFootprint, ncclFootprint, overlapLossMs, overlapSlowdown } from '../../hardware/overlap-cost.ts';
import { collectiveTimeUs, type Interconnect } from '../../hardware/interconnect.ts';
import { groupLink, type SystemSpec } from '../../hardware/systems.ts';
import { expertDegrees, moeLayerPattern, moeRefusals, type ExpertDegrees, type MoeSetup } from '../../megatron/moe.ts';
import type { RecomputeModule } from '../../megatron/recompute-modules.ts';
import type { Degrees, TrainingSetup } from '../../megatron/training-setup.ts';
import type { LayerPlan } from '../../parallel/plan-types.ts';
import type { Timeline } from '../../schedule/schedule.ts';
import { defaultKernelOptions, linearPrecisionOf, linearRecipeOf } from '../layer/kernel-options.ts';
import { expertGatherBytesPerParam, quantizedWeightsOf } from './quantized-params.ts';
import {
  denseMlpFlops,
  isSharedTerm,
  moeCompute,
  moeModelFlops,
  termsUs,
  type MoeCompute,
  type MoeShapes,
} from '../layer/moe-layer.ts';
import type { Machine } from '../layer/projected-layer.ts';
import { bucketSyncUs } from '../links/data-parallel.ts';
import { dispatchComm, expertLinks, type DispatchComm } from '../links/expert-parallel.ts';
import { membersPerNode } from '../links/group-links.ts';
import type { PipelineSplit } from '../../mesh/pipeline-split.ts';
import { optimizerMs } from './optimizer.ts';
import { dpSharding } from './fsdp-step.ts';

/** SMs DeepEP's normal kernels take (Megatron's moe_deepep_num_sms, historical default 20: transformer_config.py:931-933). */
export const deepEpSms = 20;

/** The span of the dense MLP in one pass of the scheduled block (rank 0), ms. */
export interface MlpSpan {
  readonly forwardMs: number;
  readonly backwardMs: number;
}

/**
 * The dense MLP's span in the block's timeline, the part a MoE layer replaces: forward, from the
 * end of the pre-MLP norm (the op with the gain g2) to the end of the last op before the
 * closing residual add (the SP gather, fc1, activation, fc2 and the TP reduce); backward, from
 * the end of the forward to the end of the last op before the pre-MLP norm's backward.
 */
export function denseMlpSpan(block: LayerPlan, t: Timeline): MlpSpan {
  const fwd = block.ops.filter((o) => o.phase === 'forward');
  const bwd = block.ops.filter((o) => o.phase === 'backward');
  const norm = fwd.findIndex((o) => o.weight === 'g2');
  const fwdMlp = new Set(fwd.slice(norm + 1, -1).map((o) => o.index));
  const bwdNorm = bwd.findIndex((o) => o.weight === 'g2');
  const bwdMlp = new Set(bwd.slice(0, bwdNorm).map((o) => o.index));
  const ev = t.events.filter((e) => e.rank === 0);
  const end = (keep: (i: number) => boolean): number =>
    Math.max(0, ...ev.filter((e) => keep(e.opIndex)).map((e) => e.t1));
  const normEnd = end((i) => i === fwd[norm]!.index);
  const forwardEnd = end((i) => fwd.some((o) => o.index === i));
  return {
    forwardMs: end((i) => fwdMlp.has(i)) - normEnd,
    backwardMs: end((i) => bwdMlp.has(i)) - forwardEnd,
  };
}

/** MoE layers in each chunk of the split: chunk c of stage i is virtual stage c·p + i, layers in order. */
export function moeLayersPerChunk(split: PipelineSplit, pattern: readonly boolean[]): number[][] {
  const p = split.layers.length;
  const v = split.layers[0]!.length;
  const out = split.layers.map((row) => row.map(() => 0));
  let at = 0;
  for (let k = 0; k < p * v; k++) {
    const i = k % p;
    const ch = Math.floor(k / p);
    const n = split.layers[i]![ch]!;
    out[i]![ch] = pattern.slice(at, at + n).filter(Boolean).length;
    at += n;
  }
  return out;
}

/** A MoE step's model: what one MoE layer costs per micro-batch and holds, and where the MoE layers sit. */
export interface MoeStepModel {
  readonly moe: MoeSetup;
  readonly degrees: ExpertDegrees;
  readonly shapes: MoeShapes;
  /** MoE layers per (stage, chunk). */
  readonly layersPerChunk: readonly (readonly number[])[];
  readonly moeLayers: number;
  readonly compute: MoeCompute;
  /** One direction (dispatch; the combine mirrors it) of the token exchange, µs. */
  readonly dispatch: DispatchComm;
  /** The shared experts' TP all-gather and reduce-scatter per pass (t > 1 with SP), µs. */
  readonly sharedTpUs: { readonly forward: number; readonly backward: number };
  /** The dense MLP span a MoE layer replaces, and the MoE part that replaces it, ms per micro-batch. */
  readonly denseMlp: MlpSpan;
  readonly forwardMs: number;
  readonly backwardMs: number;
  /** The token exchanges per pass (dispatch and combine: EP exchange and ETP gather each), and what of them is exposed, ms. */
  readonly commMs: { readonly forward: number; readonly backward: number };
  readonly exposedCommMs: { readonly forward: number; readonly backward: number };
  /** Per MoE layer on one rank: expert parameters (E/EP experts, 1/ETP of each), and the non-expert change (router + shared − dense MLP). */
  readonly expertParams: number;
  readonly nonExpertParamDelta: number;
  /** Per MoE layer and micro-batch, bytes: kept activations over the dense MLP's, and the permutation buffers during the forward. */
  readonly keptDelta: number;
  readonly permutationBytes: number;
  /** Model FLOPs a MoE layer adds over the dense layer, per micro-batch at TP = 1 (active experts: k of E). */
  readonly modelFlopsDelta: number;
  /** What --recompute-modules moe, moe_act and shared_experts drop and run again per MoE layer and micro-batch (moeModuleRecompute). */
  readonly recompute: MoeModuleRecompute;
}

/** One recomputed MoE submodule per MoE layer and micro-batch: bytes no longer kept, time and model FLOPs (all ranks at TP = 1) run again. */
export interface MoeRecomputeUnit {
  readonly droppedBytes: number;
  readonly redoMs: number;
  readonly redoFlops: number;
}

/** --recompute-modules' MoE submodules (transformer_config.py:546-562). */
export interface MoeModuleRecompute {
  readonly moe: MoeRecomputeUnit;
  readonly moeAct: MoeRecomputeUnit;
  readonly sharedExperts: MoeRecomputeUnit;
}

/**
 * The MoE model of `setup` (undefined without MoE). Megatron's rules on the MoE flags are
 * checked here (moeRefusals) and refused with their reason and source line.
 *
 * A MoE layer replaces the dense MLP's span (denseMlpSpan) by, per pass:
 *   compute (moeCompute, the shared experts aside) + shared experts' TP collectives
 *   + exposed exchanges (2·(EP exchange + ETP gather)) + shared experts' compute, where
 *     --moe-shared-expert-overlap runs the shared experts beside the exchanges (max of the two
 *     in place of their sum: token_dispatcher.py:688-707 launches the shared fc1 after the
 *     dispatch all-to-all on its own stream).
 * --overlap-moe-expert-parallel-comm (Megatron's combined 1F1B: one micro-batch's all-to-alls under
 * another's forward or backward compute) hides the exchanges under the layer's compute of the
 * other pass: exposed = max(0, exchanges(f + b) − compute(f + b)), split between the passes in
 * proportion; while hidden, the exchanges slow that compute by the SMs and HBM traffic they take
 * (overlap-cost.ts: C·(1 − 1/f)), counted as exposed.
 */
export function moeStepModel(
  setup: TrainingSetup,
  machine: Machine,
  deg: Degrees,
  split: PipelineSplit,
  block: LayerPlan,
  blockT: Timeline,
  tpLink: Interconnect,
): MoeStepModel | undefined {
  const moe = setup.moe;
  if (!moe) return undefined;
  const { system, dtype } = machine;
  const kernels = machine.kernels ?? defaultKernelOptions;
  const refusals = moeRefusals(moe, {
    tp: deg.tp,
    sp: setup.sp,
    pp: deg.pp,
    vpp: deg.vpp,
    gpus: setup.gpus,
    layers: setup.layers,
    fullRecompute: (setup.recomputation?.granularity ?? (setup.recompute ? 'full' : undefined)) === 'full',
    halfPrecision: dtype !== 'fp32',
    biases: kernels.layerArch === 'gpt',
  });
  if (refusals.length > 0) throw new Error(refusals.map((r) => `${r.message} (${r.source})`).join(' '));
  const degrees = expertDegrees(moe, deg.tp, deg.pp, setup.gpus);
  const pattern = moeLayerPattern(moe.layerFreq, setup.layers);
  const layersPerChunk = moeLayersPerChunk(split, pattern);
  const c = block.config;
  const own = block.ranks[0]!;
  const tokens = (own.tokens[1] - own.tokens[0]) * c.b;
  const gated = kernels.layerArch !== 'gpt';
  const shapes: MoeShapes = {
    tokens,
    hidden: c.h,
    experts: moe.experts,
    topk: moe.topk,
    ffn: moe.ffn,
    sharedFfn: moe.sharedFfn ?? 0,
    tp: deg.tp,
    etp: degrees.etp,
    ep: degrees.ep,
    gated,
    groupedGemm: moe.groupedGemm,
    dispatcher: moe.dispatcher,
    capacityFactor: moe.capacityFactor,
    ...(moe.padToCapacity && { padToCapacity: true }),
    imbalance: moe.imbalance,
  };
  const bytes = dtypeBytes[dtype];
  const precision = linearPrecisionOf(kernels, dtype);
  // At a training step's sustained clock, as the dense and MLA layers (sustained-clock.ts).
  const recipe = linearRecipeOf(kernels);
  const compute = moeCompute(shapes, system.gpu, precision, bytes, 'sustained', recipe && { recipe, dtype });
  const links = expertLinks(system, degrees.ep, degrees.etp);
  const dispatch = dispatchComm(system, links, moe.dispatcher, {
    tokens,
    hidden: c.h,
    experts: moe.experts,
    topk: moe.topk,
    bytes,
    routedRows: compute.rows.sent,
    imbalance: compute.rows.load,
  });
  const tpRows = tokens * deg.tp * c.h * bytes;
  const tpOne =
    deg.tp > 1 && shapes.sharedFfn > 0
      ? system.collectiveBaseUs + collectiveTimeUs('allGather', tpRows, deg.tp, tpLink)
      : 0;
  const sharedTpUs = { forward: 2 * tpOne, backward: 3 * tpOne };
  // Dispatch and combine, each the EP exchange and the ETP gather (or scatter), per pass.
  const exchangeMs = (2 * (dispatch.exchangeUs + dispatch.etpUs)) / 1e3;
  const pass = (terms: MoeCompute['forward'], tpUs: number) => ({
    computeMs: (termsUs(terms, (t) => !isSharedTerm(t)) + tpUs) / 1e3,
    sharedMs: termsUs(terms, isSharedTerm) / 1e3,
  });
  const f = pass(compute.forward, sharedTpUs.forward);
  const b = pass(compute.backward, sharedTpUs.backward);
  const denseMlp = denseMlpSpan(block, blockT);
  let exposedF = exchangeMs;
  let exposedB = exchangeMs;
  if (moe.overlapEpComm) {
    // Hidden under the other pass's compute: the layer's attention part, the MoE compute and the shared experts.
    const other =
      blockT.stepMs - denseMlp.forwardMs - denseMlp.backwardMs + f.computeMs + b.computeMs + f.sharedMs + b.sharedMs;
    const exposed = Math.max(0, 2 * exchangeMs - other);
    // The hidden part slows the compute under it by the SMs and HBM traffic the exchange takes
    // (overlap-cost.ts): NCCL's channels for the all-to-all, DeepEP's SMs for flex (20, its
    // historical default, transformer_config.py:931-933).
    const footprint =
      moe.dispatcher === 'flex'
        ? commFootprint('allGather', system.intra.busGBps, deepEpSms)
        : ncclFootprint('allGather', system.intra);
    const lossMs = overlapLossMs(2 * exchangeMs - exposed, overlapSlowdown(false, system.gpu, footprint));
    const share = (exposed + lossMs) / (2 * exchangeMs || 1);
    exposedF = exchangeMs * share;
    exposedB = exchangeMs * share;
  }
  // The shared experts run beside the exchanges with --moe-shared-expert-overlap, after them without.
  const withShared = (exposed: number, shared: number): number =>
    moe.sharedExpertOverlap ? Math.max(exposed, shared) : exposed + shared;
  const forwardMs = f.computeMs + withShared(exposedF, f.sharedMs);
  const backwardMs = b.computeMs + withShared(exposedB, b.sharedMs);

  const g = gated ? 3 : 2;
  const expertParams = degrees.localExperts * g * c.h * (moe.ffn / degrees.etp);
  const nonExpertParamDelta = c.h * moe.experts + (g * c.h * shapes.sharedFfn) / deg.tp - (g * c.h * c.ffn) / deg.tp;
  const rows = compute.rows;
  const fPer = moe.ffn / degrees.etp;
  const dense = (tokens * deg.tp * (g * c.ffn) * bytes) / deg.tp;
  // Kept per MoE layer: the router's fp32 scores and probabilities; per routed row the experts'
  // input, fc1's output ((g − 1)·F/ETP) and the activation's (F/ETP); the shared experts' fc1 and
  // activation outputs on the TP group's T·t rows.
  const actKept = rows.computed * fPer * bytes;
  const sharedKept = tokens * deg.tp * g * (shapes.sharedFfn / deg.tp) * bytes;
  const moeKept = 2 * tokens * moe.experts * 4 + rows.computed * (c.h + g * fPer) * bytes + sharedKept;
  const S = c.s * deg.cp * c.b;
  const sharedForwardFlops = 2 * S * g * c.h * shapes.sharedFfn;
  const recompute: MoeModuleRecompute = {
    moe: { droppedBytes: moeKept, redoMs: forwardMs, redoFlops: moeModelFlops(shapes, S) / 3 },
    moeAct: {
      droppedBytes: actKept,
      redoMs: termsUs(compute.forward, (t) => t.term === 'expert-act') / 1e3,
      redoFlops: 0,
    },
    sharedExperts: {
      droppedBytes: sharedKept,
      redoMs: f.sharedMs + sharedTpUs.forward / 1e3,
      redoFlops: sharedForwardFlops,
    },
  };
  return {
    moe,
    degrees,
    shapes,
    layersPerChunk,
    moeLayers: pattern.filter(Boolean).length,
    compute,
    dispatch,
    sharedTpUs,
    denseMlp,
    forwardMs,
    backwardMs,
    commMs: { forward: exchangeMs, backward: exchangeMs },
    exposedCommMs: { forward: exposedF, backward: exposedB },
    expertParams,
    nonExpertParamDelta,
    keptDelta: moeKept - dense,
    permutationBytes: (rows.sent + rows.computed) * c.h * bytes,
    modelFlopsDelta: moeModelFlops(shapes, S) - denseMlpFlops(c.h, c.ffn, gated, S),
    recompute,
  };
}

/**
 * What a MoE layer's selective recomputation does per micro-batch under `modules`
 * (transformer_config.py:546-562, core_v0.19.0):
 * - moe: the whole MoE forward (router, dispatch, experts, combine, shared experts:
 *   moe_layer.py:246-250, :690-700) in a checkpoint; drops all it keeps, runs its forward span again
 *   (the exchanges included), and holds its activations again while its backward runs.
 * - moe_act: the experts' activation in an output-discarding checkpoint (experts.py:268-271,
 *   :882-894): drops the activation's output (F/ETP per routed row), runs the activation again.
 * - shared_experts: the shared experts in a checkpoint (moe_layer.py:251-254, :510-523): drops
 *   their fc1 and activation outputs, runs their forward (and TP collectives) again.
 * Nested under moe, moe_act's and shared_experts' checkpoints run again inside moe's recomputed
 * forward and again before their own backward: their times and FLOPs add, their bytes do not.
 */
export function moeRecomputeOf(
  x: MoeStepModel,
  modules: readonly RecomputeModule[],
): MoeRecomputeUnit & { readonly transientBytes: number; readonly on: boolean } {
  const r = x.recompute;
  const units = [
    modules.includes('moe') ? r.moe : undefined,
    modules.includes('moe_act') ? r.moeAct : undefined,
    modules.includes('shared_experts') && x.shapes.sharedFfn > 0 ? r.sharedExperts : undefined,
  ].filter((u): u is MoeRecomputeUnit => u !== undefined);
  const whole = modules.includes('moe');
  const parts = units.filter((u) => u !== r.moe);
  return {
    on: units.length > 0,
    droppedBytes: whole ? r.moe.droppedBytes : parts.reduce((a, u) => a + u.droppedBytes, 0),
    transientBytes: whole ? r.moe.droppedBytes : Math.max(0, ...parts.map((u) => u.droppedBytes)),
    redoMs: units.reduce((a, u) => a + u.redoMs, 0),
    redoFlops: units.reduce((a, u) => a + u.redoFlops, 0),
  };
}

/** The expert-data-parallel group's link: EDP ranks ETP·EP apart (parallel_state.py's expert rank generator). */
export const expertDpLink = (system: SystemSpec, d: Pick<ExpertDegrees, 'edp' | 'etp' | 'ep'>): Interconnect =>
  groupLink(system, d.edp, membersPerNode(system, d.etp * d.ep, d.edp));

/**
 * The expert gradients' sync over the expert-data-parallel group (EDP ranks ETP·EP apart, the
 * expert rank generator of parallel_state.py), one bucket of the stage's expert parameters
 * priced as data-parallel.ts prices a bucket (all-reduce; with the distributed optimizer a
 * reduce-scatter of the gradients, and the parameters' all-gather at `paramBytes` per parameter,
 * quantized-params.ts expertGatherBytesPerParam), ms.
 */
export function expertStateSync(
  machine: Machine,
  x: MoeStepModel,
  stageExpertParams: number,
  distributedOptimizer: boolean,
  paramBytes?: number,
): { gradMs: number; paramMs: number } {
  const { system, dtype } = machine;
  const us = bucketSyncUs(
    stageExpertParams,
    dtype,
    distributedOptimizer,
    x.degrees.edp,
    expertDpLink(system, x.degrees),
    system,
    undefined,
    paramBytes,
  );
  return { gradMs: us.gradUs / 1e3, paramMs: us.paramUs / 1e3 };
}

/** What the experts add to a step past the pipeline, ms (the slowest stage's). */
export interface MoeTail {
  /** Expert gradient sync over expert-DP not hidden (after the last backward without --overlap-grad-reduce; beyond the stage's last backward with it). */
  readonly gradSyncMs: number;
  /** The distributed optimizer's expert parameter all-gather not hidden (all of it without --overlap-param-gather; beyond the first forward with it). */
  readonly paramGatherMs: number;
  /** Adam on the expert shard. */
  readonly optimizerMs: number;
}

/**
 * The expert-DP tail of a step: per stage, expertStateSync of its expert parameters, hidden under
 * one micro-batch's backward of its first chunk (the last to run) with --overlap-grad-reduce and
 * under its first forward with --overlap-param-gather; the Adam update of the expert shard
 * (optimizer.ts's model with d = EDP).
 */
export function moeTail(
  setup: TrainingSetup,
  machine: Machine,
  x: MoeStepModel,
  expertParams: readonly (readonly number[])[],
  forwardMs: (i: number, ch: number) => number,
  backwardMs: (i: number, ch: number) => number,
): MoeTail {
  // FSDP (fsdp-step.ts dpSharding): the optimizer sharded as the distributed optimizer shards it; with
  // gradients (ZeRO-2/3) or weights (ZeRO-3) sharded, the expert units' reduce-scatters and gathers run
  // per layer (chunk-times.ts fsdpExperts), and only ZeRO-2's gather after the step is left here.
  const sharding = dpSharding(setup);
  const distOpt = sharding.optimizer;
  const q = quantizedWeightsOf(setup, machine.kernels ?? defaultKernelOptions);
  const paramBytes = expertGatherBytesPerParam(q, machine);
  let gradSyncMs = 0;
  let paramGatherMs = 0;
  let most = 0;
  expertParams.forEach((row, i) => {
    const params = row.reduce((a, p) => a + p, 0);
    most = Math.max(most, params);
    const s = expertStateSync(machine, x, params, distOpt, paramBytes);
    const gradMs = sharding.grads ? 0 : s.gradMs;
    const paramMs = sharding.params ? 0 : s.paramMs;
    gradSyncMs = Math.max(gradSyncMs, setup.overlapGradReduce ? Math.max(0, gradMs - backwardMs(i, 0)) : gradMs);
    paramGatherMs = Math.max(
      paramGatherMs,
      setup.overlapParamGather && !setup.fsdp ? Math.max(0, paramMs - forwardMs(i, 0)) : paramMs,
    );
  });
  // Every expert weight is a linear layer's: all quantized with quantized parameters (optimizer.ts).
  const optimizer = optimizerMs(
    [most],
    distOpt,
    x.degrees.edp,
    machine.dtype,
    machine.system.gpu,
    q?.params ? [most] : [],
  );
  return { gradSyncMs, paramGatherMs, optimizerMs: most > 0 ? optimizer : 0 };
}

/**
 * The FLOPs the MoE layers change, all GPUs per step: each MoE layer's modelFlopsDelta per
 * micro-batch (k active experts, router and shared experts in place of the dense MLP), times
 * DP replicas and m micro-batches; executed adds the forward third of it for every MoE layer
 * full recomputation runs again (min(recomputed, MoE) layers of a chunk), and the forward FLOPs
 * of the MoE submodules selective recomputation runs again (moeRecomputeOf) for each MoE layer.
 */
export function moeStepFlops(
  x: MoeStepModel,
  rec: readonly (readonly { readonly recomputedLayers: number; readonly recomputedMoeModules?: number }[])[],
  replicas: number,
  m: number,
  modules: readonly RecomputeModule[] = [],
): { model: number; executed: number } {
  const model = replicas * m * x.moeLayers * x.modelFlopsDelta;
  const perModules = moeRecomputeOf(x, modules).redoFlops;
  let redo = 0;
  rec.forEach((row, i) =>
    row.forEach((r, ch) => {
      redo += Math.min(r.recomputedLayers, x.layersPerChunk[i]![ch]!) * (x.modelFlopsDelta / 3);
      redo += (r.recomputedMoeModules ?? 0) * perModules;
    }),
  );
  return { model, executed: model + replicas * m * redo };
}
