import { hostTensor } from '../comm/host-tensor.ts';
import { addKernel } from '../reference/add.ts';
import type { MoeWeights } from '../reference/moe/block.ts';
import type { MoeConfig } from '../reference/moe/config.ts';
import { opSpec, type Backend } from './backend.ts';
import type { LayerConfig } from './config.ts';
import { localDims } from './dims.ts';
import type { LayerComm } from './layer-comm.ts';
import {
  attentionHalfBackward,
  attentionHalfForward,
  embedBackward,
  embedForward,
  finalizeBlockGrads,
  lossBackward,
  lossForward,
  mlpNormBackward,
  preNorm,
  type StepInputs,
} from './layer.ts';
import {
  moeEpForward,
  timedSpan,
  type MoeEpForward,
  type MoeEpResult,
  type MoeGroups,
  type MoeTrace,
} from './moe-ep.ts';
import type { MoeDispatcher } from './moe-layout.ts';
import type { RankOwnership } from './plan-types.ts';
import type { WeightName } from './weight-names.ts';
import type { WeightSet } from './weights.ts';

// One rank's transformer layer with an MoE block in place of the dense MLP (Megatron-Core
// core_v0.19.0 gpt_layer_specs.py get_gpt_layer_with_transformer_engine_spec with num_experts:
// mlp = MoELayer; transformer_layer.py TransformerLayer.forward), layout [s, b, h], t = TP degree:
//   x2 = x + g(Attention(f(RMSNorm(x))))           the TP attention half, SP as the dense layer
//   y  = x2 + MoE(RMSNorm(x2; g2))                  the MoE block on the rank's SP shard [s/t·b, h]
// Under SP the MoE layer's input is the sequence shard [s/t, b, h] (moe_layer.py MoELayer.forward
// takes hidden_states as the SP region leaves them; the router sees s/t·b tokens per rank); the
// block (moe-ep.ts moeEpBlock) dispatches them over the expert mesh and hands back [s/t·b, h],
// so neither f nor g surrounds it. Without a vocabulary the step's loss is
//   L = ⟨dy, y⟩ + aux + z                          (MoEAuxLossAutoScaler scale 1)
// with one, x = embed(ids) and L = mean CE(y·W_out; targets) + aux + z (layer.ts embedForward,
// lossForward); the backward: dy → the block's input gradient dln2 (with the router's aux and z
// terms) → dx2 = RMSNorm backward + dy → the attention half's backward → dx (→ dEmb). After it, the replicated norm
// gains' gradients are summed over TP under SP (finalize_model_grads), then the attention half's
// gradients over DP (DDP; the ranks of a DP group hold the same attention shards and their own tokens).

/** The attention half's weights: what a rank of the MoE layer uploads of the dense layer's. */
export const moeLayerDenseWeights = ['wqkv', 'wo', 'g1', 'g2'] as const;

/** One of moeLayerDenseWeights. */
export type MoeLayerDenseWeight = (typeof moeLayerDenseWeights)[number];

/** The weights a rank of the MoE layer uploads: the attention half's, with a vocabulary the embedding and the output layer too. */
export const moeLayerWeights = (c: LayerConfig): readonly WeightName[] =>
  c.vocab > 0 ? [...moeLayerDenseWeights, 'emb', 'wout'] : moeLayerDenseWeights;

/** One rank's MoE layer, read back. */
export interface MoeLayerRankResult {
  /** y [sl, b, h] of the rank's tokens. */
  readonly y: Float32Array;
  /** dx [sl, b, h] (empty with a vocabulary: the input gradient goes into dEmb). */
  readonly dx: Float32Array;
  /** With a vocabulary, the per-token cross entropy [s, b] (the same on every TP rank). */
  readonly loss?: Float32Array;
  /** The MoE block's input, RMSNorm(x2; g2) [sl·b, h] (the oracle bounds the routing's logit error with it). */
  readonly moeInput: Float32Array;
  /** The gradients of the rank's TP shards (g1, g2 whole; with a vocabulary emb and wout too), summed over DP. */
  readonly grads: Readonly<Record<MoeLayerDenseWeight, Float32Array>> & Partial<Record<WeightName, Float32Array>>;
  /** The MoE block's results: its y is the block's output, its dx the gradient of its input. */
  readonly moe: MoeEpResult;
}

/** What moeLayerStep refuses: one message per problem, none when it runs. */
export function moeLayerErrors(c: LayerConfig, h: number): string[] {
  const errors: string[] = [];
  if (c.tp > 1 && !c.sp)
    errors.push(
      `tp ${c.tp} without sequence parallelism: Megatron refuses MoE with TP and no SP in training (moe_layer.py:629-633); turn sp on.`,
    );
  if (c.h !== h) errors.push(`the layer's h is ${c.h} but the MoE block's is ${h}; give both the same hidden size.`);
  return errors;
}

/** A layer's forward on one rank: its output y [sl, b, h] (the caller's), the block's input and forward, and its backward. */
export interface MoeLayerForward<T> {
  readonly y: T;
  readonly moeInput: Float32Array;
  readonly moe: MoeEpForward;
  /**
   * From dy [sl, b, h] (freed here): dx [sl, b, h] (the caller's), the attention half's gradients
   * written into `grads` (summed over TP for the norm gains by the caller's finalizeBlockGrads, not
   * over DP), the block's results.
   */
  backward(dy: T, grads: WeightSet<T>): Promise<{ dx: T; moe: MoeEpResult }>;
}

/**
 * The MoE layer's forward on one rank (see the header): x [sl, b, h] (kept for the backward, freed
 * there); `w` its attention shards, `mw` the logical MoE weights. The attention passes go on the
 * trace as compute events `attention` and `attention.backward` (with `opts.trace`).
 */
export async function moeLayerForward<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  c: LayerConfig,
  own: RankOwnership,
  w: WeightSet<T>,
  groups: MoeGroups,
  mc: MoeConfig,
  mw: MoeWeights,
  x: T,
  opts: { readonly dispatcher: MoeDispatcher; readonly trace?: MoeTrace },
): Promise<MoeLayerForward<T>> {
  const errors = moeLayerErrors(c, c.h);
  if (errors.length > 0) throw new Error(`MoE layer: ${errors.join(' ')}`);
  const { sl, b, h } = localDims(c);
  const tokens = c.sp && c.tp > 1 ? 'sequence' : 'replicated';
  const shape = [sl, b, h];
  const span = (op: string) => ({ op, shape: [sl * b, h] });
  const { x2, saved } = await timedSpan(be, opts.trace, span('attention'), () =>
    attentionHalfForward(be, lc, c, own, w, x),
  );
  const { n: ln2, rstd: rstd2 } = preNorm(be, c, 'ln2', x2, w.g2!);
  const moeInput = await be.read(ln2);
  be.release(ln2);
  const moe = await moeEpForward(be, groups, mc, h, moeInput, mw, {
    dispatcher: opts.dispatcher,
    sp: true,
    ...(opts.trace && { trace: opts.trace }),
  });
  be.phase = lc.phase = 'forward';
  const y = be.tensor('y', shape);
  const moeOut = be.tensor('moe.y', shape, moe.y);
  be.kernel(opSpec('residual.mlp', tokens), addKernel, [x2, moeOut, y], {});
  be.release(moeOut);
  return {
    y,
    moeInput,
    moe,
    backward: async (dy, grads) => {
      const result = await moe.backward(await be.read(dy));
      be.phase = lc.phase = 'backward';
      const dln2 = be.tensor('d.ln2', shape, result.dx);
      const dx2 = mlpNormBackward(be, c, w, { x2, rstd2, dln2, dy }, grads);
      be.release(dy);
      const dx = await timedSpan(be, opts.trace, span('attention.backward'), () =>
        attentionHalfBackward(be, lc, c, w, saved, dx2, grads),
      );
      be.release(dx2);
      return { dx, moe: result };
    },
  };
}

/** Sums a rank's gradients over its DP group (DDP), one at a time (a group's collectives go in the same order on every rank), read back. */
export async function sumOverDp<T>(
  be: Backend<T>,
  dp: MoeGroups['dp'],
  grads: WeightSet<T>,
  names: readonly WeightName[],
): Promise<Partial<Record<WeightName, Float32Array>>> {
  const out: Partial<Record<WeightName, Float32Array>> = {};
  for (const name of names) {
    const g = grads[name]!;
    const t = hostTensor(be.shapeOf(g), await be.read(g));
    out[name] = dp.size === 1 ? t.data : (await dp.allReduce(t, 'sum', `dp.grads.${name}`)).data;
  }
  return out;
}

/**
 * The MoE layer on one rank, forward and backward (see the header): `lc` over its attention TP
 * group, `groups` its expert mesh's (moe-ep.ts), `w` its shards (moeLayerWeights), `mw` the
 * logical MoE weights (every rank the same); `data` its replica's ids and targets [s, b] (with a
 * vocabulary), else its own tokens' x and dy [sl, b, h].
 */
export async function moeLayerStep<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  c: LayerConfig,
  own: RankOwnership,
  w: WeightSet<T>,
  groups: MoeGroups,
  mc: MoeConfig,
  mw: MoeWeights,
  data: StepInputs,
  opts: { readonly dispatcher: MoeDispatcher; readonly trace?: MoeTrace },
): Promise<MoeLayerRankResult> {
  const { s, sl, b, h } = localDims(c);
  const shape = [sl, b, h];
  const grads: WeightSet<T> = {};
  const need = <V>(v: V | undefined, what: string): V => {
    if (v === undefined) throw new Error(`MoE layer: missing ${what} (vocab ${c.vocab}).`);
    return v;
  };
  const vocab = c.vocab > 0;
  const ids = vocab ? be.tensor('ids', [s, b], need(data.ids, 'ids')) : undefined;
  const x = ids ? await embedForward(be, lc, c, own, w, ids) : be.tensor('x', shape, need(data.x, 'x'));
  const pass = opts.trace?.pass ?? (() => {});
  pass('forward');
  const f = await moeLayerForward(be, lc, c, own, w, groups, mc, mw, x, opts);
  let loss: T | undefined;
  let dy: T;
  if (vocab) {
    const head = await lossForward(be, lc, c, own, w, f.y, be.tensor('targets', [s, b], need(data.targets, 'targets')));
    loss = head.loss;
    pass('backward');
    dy = await lossBackward(be, lc, c, own, w, head.saved, grads);
  } else {
    pass('backward');
    dy = be.tensor('dy', shape, need(data.dy, 'dy'));
  }
  const { dx, moe } = await f.backward(dy, grads);
  if (ids) await embedBackward(be, lc, c, own, w, ids, dx, grads);
  pass('finalize'); // the SP norms' all-reduce and the DP sum of the gradients
  await finalizeBlockGrads(be, lc, c, grads);
  const summed = await sumOverDp(be, groups.dp, grads, moeLayerWeights(c));
  const out = {
    y: await be.read(f.y),
    dx: ids ? new Float32Array(0) : await be.read(dx),
    ...(loss !== undefined && { loss: await be.read(loss) }),
    moeInput: f.moeInput,
    grads: summed as Record<MoeLayerDenseWeight, Float32Array>,
    moe,
  };
  be.release(f.y);
  if (!ids) be.release(dx);
  return out;
}
