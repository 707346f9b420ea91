import { dtypeBytes } from '../../hardware/dtype.ts';
import { collectiveTimeUs, type Interconnect } from '../../hardware/interconnect.ts';
import { mlaParams, mlaRefusals, type MlaSetup } from '../../megatron/mla.ts';
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
}

/**
 * The MLA model of `setup` (undefined without --multi-latent-attention), Megatron's refusals
 * (mlaRefusals) thrown with their lines. Every layer's dense attention span is replaced by the
 * MLA layer's compute (mlaCompute at the sustained clock) plus its TP collectives
 * (mlaCollectives, each collectiveBaseUs + collectiveTimeUs on the TP link, exposed: Megatron runs
 * them on the compute stream). Context parallelism is refused: its ring would exchange MLA's
 * key [s, n/t, d_q] and value [s, n/t, d_v], which the dense ring model does not price.
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
  if (deg.cp > 1)
    throw new Error(
      'multi-latent attention with context parallelism is not priced yet (its ring exchanges K of d_q and V of d_v): give --context-parallel-size 1.',
    );
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
  const model = mlaFlops({ ...shapes, tp: 1 }).model;
  const denseModel =
    3 * 2 * S * (c.h * (c.heads + 2 * c.groups) * d + c.heads * d * c.h) + 3 * 2 * 2 * c.b * c.s * c.s * c.heads * d;
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
