import { dtypeBytes } from '../../hardware/dtype.ts';
import { collectiveTimeUs, type Interconnect } from '../../hardware/interconnect.ts';
import { mlaParams, mlaQkHeadWidth, mlaRefusals, type MlaSetup } from '../../megatron/mla.ts';
import type { RecomputeModule } from '../../megatron/recompute-modules.ts';
import type { Degrees, TrainingSetup } from '../../megatron/training-setup.ts';
import { headDim } from '../../parallel/config.ts';
import type { LayerPlan } from '../../parallel/plan-types.ts';
import type { Timeline } from '../../schedule/schedule.ts';
import { attentionKernelOf, defaultKernelOptions, linearPrecisionOf } from '../layer/kernel-options.ts';
import {
  mlaActivations,
  mlaCollectives,
  mlaCompute,
  mlaFlops,
  type MlaCollective,
  type MlaCompute,
  type MlaShapes,
} from '../layer/mla-layer.ts';
import type { Machine } from '../layer/projected-layer.ts';
import type { MlpSpan } from './moe-step.ts';

/**
 * The dense attention's span in the block's timeline (rank 0), the part an MLA layer replaces:
 * forward, from the end of the input norm (the op with the gain g1) to the end of the last op
 * before the first residual add (the SP gather, QKV, RoPE, core attention, proj, the TP reduce);
 * backward, from the end of the pre-MLP norm's weight gradient (the last g2 op) to the end of the
 * last op before the input norm's backward.
 */
export function denseAttentionSpan(block: LayerPlan, t: Timeline): MlpSpan {
  const fwd = block.ops.filter((o) => o.phase === 'forward');
  const bwd = block.ops.filter((o) => o.phase === 'backward');
  const norm = fwd.findIndex((o) => o.weight === 'g1');
  const add = fwd.findIndex((o, i) => i > norm && o.kind === 'kernel' && o.kernel === 'add');
  const fwdAttn = new Set(fwd.slice(norm + 1, add).map((o) => o.index));
  const bwdStart = bwd.map((o) => o.weight).lastIndexOf('g2');
  const bwdEnd = bwd.findIndex((o) => o.weight === 'g1');
  const bwdAttn = new Set(bwd.slice(bwdStart + 1, bwdEnd).map((o) => o.index));
  const ev = t.events.filter((e) => e.rank === 0);
  const end = (keep: (i: number) => boolean): number =>
    Math.max(0, ...ev.filter((e) => keep(e.opIndex)).map((e) => e.t1));
  return {
    forwardMs: end((i) => fwdAttn.has(i)) - end((i) => i === fwd[norm]!.index),
    backwardMs: end((i) => bwdAttn.has(i)) - end((i) => i === bwd[bwdStart]!.index),
  };
}

/** What MLA changes in every layer of a job, per micro-batch on one rank. */
export interface MlaStepModel {
  readonly mla: MlaSetup;
  readonly shapes: MlaShapes;
  readonly compute: MlaCompute;
  /** The dense attention span an MLA layer replaces, and the MLA layer's own time (compute and TP collectives), ms. */
  readonly denseAttention: MlpSpan;
  readonly forwardMs: number;
  readonly backwardMs: number;
  /** --recompute-modules mla_up_proj: the up projections, RoPE and the latents' gathers run again before the backward, ms (0 without it). */
  readonly upProjRecomputeMs: number;
  /** Parameters per layer on one rank, MLA's less the dense attention's (QKV and proj over t). */
  readonly paramDelta: number;
  /** Kept activations per layer, MLA's less the dense attention's (query, key, value dropped with mla_up_proj). */
  readonly keptDelta: number;
  /** Model FLOPs per layer and micro-batch at TP = 1, MLA's less the dense attention's. */
  readonly modelFlopsDelta: number;
  /** Gradient elements per layer summed over TP once a step (mlaTpGradElements), in finalizeTime's all-reduce. */
  readonly tpGradElements: number;
}

/**
 * What MLA's context-parallel exchange moves per layer on one rank (TE's context_parallel.py, as the
 * dense ring, context-parallel.ts cpAttention): after the up projections every local head has its own
 * key [s/cp, b, n/t, d_q] (the shared rope part copied into each) and value [s/cp, b, n/t, d_v], so
 *   kv = s/cp·b·(n/t)·(d_q + d_v)·bytes,   q = s/cp·b·(n/t)·d_q·bytes (the all-to-all types' Q and O).
 * The latents are not what moves: the ring runs inside core attention, after the up projections.
 */
export function mlaCpBytes(x: MlaShapes, bytes: number): { q: number; kv: number } {
  const rows = x.seq * x.batch * (x.heads / x.tp);
  const dq = mlaQkHeadWidth(x.mla);
  return { q: rows * dq * bytes, kv: rows * (dq + x.mla.vHeadDim) * bytes };
}

/** MLA's core-attention block on one rank (forward and backward, ms): one step of the CP ring. */
export function mlaCoreBlock(x: Pick<MlaStepModel, 'compute'>): { forwardMs: number; backwardMs: number } {
  const core = (t: readonly { term: string; us: number }[]): number =>
    t.filter((k) => k.term === 'core-attention').reduce((a, k) => a + k.us, 0) / 1e3;
  return { forwardMs: core(x.compute.forward), backwardMs: core(x.compute.backward) };
}

/**
 * Gradient elements per layer of MLA's TP-replicated parameters that Megatron sums over the TP
 * group once a step (finalize_model_grads.py:451-454, core_v0.19.0): the duplicated down
 * projections (TELinear parallel_mode 'duplicated' marks its weights `sequence_parallel` =
 * --sequence-parallel, transformer_engine.py:1057-1062) and the latent norms (TE's norms carry the
 * same attribute) under SP, where each rank's gradients cover only its s/t tokens:
 *   h·q_lora + h·(kv_lora + d_rope) + q_lora + kv_lora (the norms with --qk-layernorm).
 * Without SP the replicas' gradients are equal and only the name rule `"q_layernorm" in name` with
 * --qk-layernorm adds q_lora ("kv_layernorm" does not match "k_layernorm"). 0 at t = 1.
 */
export function mlaTpGradElements(mla: MlaSetup, h: number, heads: number, tp: number, sp: boolean): number {
  if (tp <= 1) return 0;
  const p = mlaParams(mla, h, heads);
  if (sp) return p.qDown + p.kvDown + p.norms;
  return mla.qkLayernorm ? (mla.qLoraRank ?? 0) : 0;
}

/**
 * The MLA model of `setup` (undefined without --multi-latent-attention), Megatron's refusals
 * (mlaRefusals) thrown with their lines. Every layer's dense attention span is replaced by the
 * MLA layer's compute (mlaCompute at the sustained clock) plus its TP collectives
 * (mlaCollectives, each collectiveBaseUs + collectiveTimeUs on the TP link, exposed: Megatron runs
 * them on the compute stream). With context parallelism (Megatron builds MLA's core attention with
 * the CP group and k_channels d_q, v_channels d_v, multi_latent_attention.py:206-217; no assert
 * refuses it at core_v0.19.0) the layer runs on its s/cp tokens and the ring exchanges the
 * up-projected key and value of every local head (mlaCpBytes); chunk-times.ts prices the ring with
 * MLA's core-attention block.
 */
export function mlaStepModel(
  setup: TrainingSetup,
  machine: Machine,
  deg: Degrees,
  block: LayerPlan,
  blockT: Timeline,
  tpLink: Interconnect,
  modules: readonly RecomputeModule[],
): MlaStepModel | undefined {
  const mla = setup.mla;
  if (!mla) return undefined;
  const c = block.config;
  const refusals = mlaRefusals(mla, { heads: c.heads, groups: c.groups });
  if (refusals.length) throw new Error(refusals.map((r) => `${r.message} (${r.source})`).join(' '));
  const { system, dtype } = machine;
  const kernels = machine.kernels ?? defaultKernelOptions;
  const choice = attentionKernelOf(kernels, system.gpu.arch);
  if (choice === 'unfused')
    throw new Error(
      'multi-latent attention on the unfused attention path is not priced: give --attention-backend fused or flash (Hopper or Ampere).',
    );
  const shapes: MlaShapes = { seq: c.s, batch: c.b, hidden: c.h, heads: c.heads, tp: deg.tp, sp: setup.sp, mla };
  const precision = linearPrecisionOf(kernels, dtype);
  const compute = mlaCompute(shapes, system.gpu, dtype, precision, choice, 'sustained');
  const bytes = dtypeBytes[dtype];
  const coll = mlaCollectives(shapes);
  const collUs = (list: readonly MlaCollective[]): number =>
    list.reduce(
      (a, k) => a + system.collectiveBaseUs + collectiveTimeUs(k.kind, k.elements * bytes, deg.tp, tpLink),
      0,
    );
  const sum = (t: readonly { us: number }[]): number => t.reduce((a, k) => a + k.us, 0);
  const denseAttention = denseAttentionSpan(block, blockT);
  const upProj = modules.includes('mla_up_proj');
  const latentGathers = coll.forward.filter((k) => k.what !== 'proj-output');
  const upProjRecomputeMs = upProj ? (sum(compute.upProjRecompute) + collUs(latentGathers)) / 1e3 : 0;

  const d = headDim(c);
  const denseParams = (c.h * (c.heads + 2 * c.groups) * d + c.heads * d * c.h) / deg.tp;
  const p = mlaParams(mla, c.h, c.heads);
  const mlaRankParams = p.qDown + p.kvDown + p.norms + (p.qUp + p.kvUp + p.proj) / deg.tp;
  const a = mlaActivations(shapes, dtype, true);
  const S = c.s * c.b;
  const held = setup.sp && deg.tp > 1 ? S / deg.tp : S;
  const nq = c.heads / deg.tp;
  // The dense attention's kept tensors (activations.ts, Megatron's 'heads' K and V): QKV's input, Q, K, V, proj's input.
  const denseKept = (held * c.h + 4 * S * nq * d) * bytes;
  const mlaKept = a.downInput + a.latents + a.kPosEmb + (upProj ? 0 : a.qkv) + a.coreOut;
  // Model FLOPs over the whole sequence (c.s is the s/cp a CP rank holds; the step counts DP replicas, not CP ranks).
  const seq = c.s * deg.cp;
  const model = mlaFlops({ ...shapes, seq, tp: 1 }).model;
  const denseModel =
    3 * 2 * seq * c.b * (c.h * (c.heads + 2 * c.groups) * d + c.heads * d * c.h) +
    3 * 2 * 2 * c.b * seq * seq * c.heads * d;
  return {
    mla,
    shapes,
    compute,
    denseAttention,
    forwardMs: (sum(compute.forward) + collUs(coll.forward)) / 1e3,
    backwardMs: (sum(compute.backward) + collUs(coll.backward)) / 1e3,
    upProjRecomputeMs,
    paramDelta: mlaRankParams - denseParams,
    keptDelta: mlaKept - denseKept,
    modelFlopsDelta: model - denseModel,
    tpGradElements: mlaTpGradElements(mla, c.h, c.heads, deg.tp, setup.sp),
  };
}

/**
 * The FLOPs MLA changes, all GPUs per step: modelFlopsDelta per layer and micro-batch times the
 * layers, DP replicas and m micro-batches; executed adds its forward third for every layer full
 * recomputation runs again.
 */
export function mlaStepFlops(
  x: MlaStepModel | undefined,
  rec: readonly (readonly { readonly recomputedLayers: number }[])[],
  layers: number,
  replicas: number,
  m: number,
): { model: number; executed: number } {
  if (!x) return { model: 0, executed: 0 };
  const model = replicas * m * layers * x.modelFlopsDelta;
  const redo = rec.flat().reduce((a, r) => a + r.recomputedLayers, 0) * (x.modelFlopsDelta / 3);
  return { model, executed: model + replicas * m * redo };
}
