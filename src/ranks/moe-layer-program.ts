import type { GpuTensor } from '../kernels/tensor.ts';
import type { LayerConfig } from '../parallel/config.ts';
import type { StepInputs } from '../parallel/layer.ts';
import { LayerComm, type NamedCollective } from '../parallel/layer-comm.ts';
import type { MoeGroups } from '../parallel/moe-ep.ts';
import { moeLayerWeights, moeLayerStep, type MoeLayerRankResult } from '../parallel/moe-layer.ts';
import type { MoeDispatcher } from '../parallel/moe-layout.ts';
import { moeModelStep, type MoeModelRankResult } from '../parallel/moe-model.ts';
import { rankOwnership } from '../parallel/ownership.ts';
import { rankWeightArrays } from '../parallel/step-data.ts';
import type { WeightSet } from '../parallel/weights.ts';
import type { MoeConfig } from '../reference/moe/config.ts';
import { seededMoeWeights } from '../reference/moe/weights.ts';
import { GpuBackend } from './backend-gpu.ts';
import type { RankContext } from './context.ts';
import { kernelContext } from './layer-programs.ts';
import { rankMoeTrace } from './moe-ep-program.ts';

/** One rank's MoE layer: the layer's config (its seed also seeds the MoE weights), the block's config, the rank's data (StepInputs: ids and targets [s, b] of its replica with a vocabulary, else its x and dy [s/t, b, h]), the dispatcher. */
export interface MoeLayerArgs {
  readonly layer: LayerConfig;
  readonly config: MoeConfig;
  readonly data: StepInputs;
  readonly dispatcher: MoeDispatcher;
}

/** The rank's TP group as the layer uses it; as the layer's step (layer-programs.ts), the kernels queued so far run before each collective. */
function tpComm(ctx: RankContext, k: ReturnType<typeof kernelContext>, be: GpuBackend): LayerComm<GpuTensor> {
  return new LayerComm(
    ctx.gpuComm,
    (t: GpuTensor) => t.shape,
    (named) => (named.chunk ? k.submit() : k.flush()),
    (t) => be.adopt(t),
    () => k.submit(),
  );
}

/** The rank's results and its attention group's collectives as the layer named them, in issue order. */
export interface MoeLayerReply extends MoeLayerRankResult {
  readonly named: readonly NamedCollective[];
}

/**
 * The transformer layer with the MoE block on this rank's GPU (parallel/moe-layer.ts): the
 * attention half over the rank's TP group (ctx.gpuComm), the block over its mesh's ep, etp, tp, dp
 * and edp groups; the rank uploads its attention shards and builds the logical MoE weights from
 * the layer's seed (seededMoeWeights). The attention passes and the expert GEMMs go on its trace.
 */
export async function moeLayerProgram(ctx: RankContext, a: MoeLayerArgs): Promise<MoeLayerReply> {
  const k = kernelContext(ctx.device);
  const be = new GpuBackend(k);
  const c = a.layer;
  const own = rankOwnership(c)[ctx.rank]!;
  const lc = tpComm(ctx, k, be);
  const g = (kind: keyof MoeGroups) => ctx.mesh.group(kind).comm;
  try {
    const shards = rankWeightArrays(c, own);
    const w: WeightSet<GpuTensor> = {};
    for (const n of moeLayerWeights(c)) w[n] = be.tensor(n, shards[n]!.shape, shards[n]!.data);
    const r = await moeLayerStep(
      be,
      lc,
      c,
      own,
      w,
      { ep: g('ep'), etp: g('etp'), tp: g('tp'), dp: g('dp'), edp: g('edp') },
      a.config,
      seededMoeWeights(a.config, c.h, c.seed),
      a.data,
      { dispatcher: a.dispatcher, trace: rankMoeTrace(ctx) },
    );
    return { ...r, named: lc.log };
  } finally {
    ctx.trace.setPass(undefined);
    be.releaseAll();
  }
}

/** One rank's L layers: the base config, the block's config, the per-layer pattern (true: MoE), the rank's x and dy, the dispatcher. */
export interface MoeModelArgs extends Omit<MoeLayerArgs, 'data'> {
  readonly pattern: readonly boolean[];
  readonly x: Float32Array;
  readonly dy: Float32Array;
}

/** The L layers on this rank's GPU (parallel/moe-model.ts), as moeLayerProgram runs one. */
export async function moeModelProgram(ctx: RankContext, a: MoeModelArgs): Promise<MoeModelRankResult> {
  const k = kernelContext(ctx.device);
  const be = new GpuBackend(k);
  const c = a.layer;
  const lc = tpComm(ctx, k, be);
  const g = (kind: keyof MoeGroups) => ctx.mesh.group(kind).comm;
  try {
    return await moeModelStep(
      be,
      lc,
      c,
      rankOwnership(c)[ctx.rank]!,
      { ep: g('ep'), etp: g('etp'), tp: g('tp'), dp: g('dp'), edp: g('edp') },
      a.config,
      a.pattern,
      a.x,
      a.dy,
      { dispatcher: a.dispatcher, trace: rankMoeTrace(ctx) },
    );
  } finally {
    ctx.trace.setPass(undefined);
    be.releaseAll();
  }
}

/** The MoE layer's programs of the layer's rank workers: one layer, and L layers. */
export const moeLayerPrograms = { moeLayer: moeLayerProgram, moeModel: moeModelProgram };
