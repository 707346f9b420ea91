import { addInPlaceKernel, addKernel } from '../reference/add.ts';
import { copyColsKernel } from '../reference/copy-cols.ts';
import { embeddingBackwardKernel, embeddingKernel } from '../reference/embedding.ts';
import { rmsnormBackwardKernel, rmsnormKernel, rmsnormWeightGradKernel } from '../reference/rmsnorm.ts';
import { attentionBackward, attentionForward } from './attention.ts';
import { opSpec, type Backend } from './backend.ts';
import type { LayerConfig } from './config.ts';
import { localDims } from './dims.ts';
import { regather, type LayerComm } from './layer-comm.ts';
import { tensorParallelRegion } from './mappings.ts';
import { mlpBlockBackward, mlpBlockForward, type MlpBlockLabels } from './mlp-block.ts';
import { mlpBlockBackwardChunked, mlpBlockForwardChunked } from './mlp-block-chunked.ts';
import { tpOverlapChunks } from './tp-overlap.ts';
import type { RankOwnership } from './plan-types.ts';
import { gatheredQkv, gathersQkv } from './qkv-layout.ts';
import { outputLayer, outputLayerBackward, vocabParallelLoss } from './vocab.ts';
import type { WeightSet } from './weights.ts';
import type { WeightName } from './weight-names.ts';

/**
 * The data of one step, logical and full: ids and targets [s, b] (token ids, with a vocabulary),
 * or the layer input x [s, b, h] and the upstream gradient dy [s, b, h] (without one).
 */
export interface StepInputs {
  readonly ids?: Float32Array;
  readonly targets?: Float32Array;
  readonly x?: Float32Array | Float64Array;
  readonly dy?: Float32Array | Float64Array;
}

/**
 * One rank's results: y its layer output ([s/t, b, h] under SP, else [s, b, h]); loss the
 * per-token loss [s, b] (same on every rank); dx the input gradient (no vocabulary; same layout
 * as y); grads the gradients of its weight shards.
 */
export interface StepResult<T> {
  readonly y: T;
  readonly loss?: T;
  readonly dx?: T;
  readonly grads: WeightSet<T>;
}

/** Rows [t0, t1) of the first dim of a logical [s, ...] array (this rank's tokens under SP). */
function tokenSlice<A extends Float32Array | Float64Array>(data: A, s: number, [t0, t1]: readonly [number, number]): A {
  const row = data.length / s;
  return data.slice(t0 * row, t1 * row) as A;
}

/** The MLP block's collectives as the layer labels them. */
const mlpLabels: MlpBlockLabels = {
  gather: 'ln2.gather',
  reduce: 'mlp.reduce',
  reduceBackward: 'mlp.reduce.backward',
  regather: 'ln2.regather',
  dgradReduce: 'mlp.dgrad.reduce',
};

/**
 * Megatron's finalize_model_grads after backward (_allreduce_non_tensor_model_parallel_grads,
 * megatron/core/distributed/finalize_model_grads.py): under SP the replicated RMSNorm gains saw
 * different tokens on each rank, so their gradients are summed over the TP group — flattened into
 * one buffer [dg1 | dg2] of 2h, one all-reduce, unflattened back in place.
 */
async function finalizeNormGrads<T>(be: Backend<T>, lc: LayerComm<T>, h: number, dg1: T, dg2: T): Promise<void> {
  be.phase = lc.phase = 'finalize';
  const flat = be.tensor('d.norms', [1, 2 * h]);
  const gains = [dg1, dg2] as const;
  const pack = { role: 'wgrad', underAsync: false } as const;
  gains.forEach((g, i) =>
    be.kernel(
      opSpec(`norm.grads.flatten.g${i + 1}`, 'replicated', { ...pack, weight: i ? 'g2' : 'g1' }),
      copyColsKernel,
      [g, flat],
      { rows: 1, n: h, from: { w: h, c0: 0 }, to: { w: 2 * h, c0: i * h } },
    ),
  );
  const why = 'finalize_model_grads: one coalesced all-reduce of the replicated RMSNorm weight gradients under SP';
  const summed = await lc.allReduce(opSpec('norm.grads.reduce', 'sequence', { role: 'wgrad' }), why, flat);
  gains.forEach((g, i) =>
    be.kernel(
      opSpec(`norm.grads.unflatten.g${i + 1}`, 'replicated', { ...pack, weight: i ? 'g2' : 'g1' }),
      copyColsKernel,
      [summed, g],
      { rows: 1, n: h, from: { w: 2 * h, c0: i * h }, to: { w: h, c0: 0 } },
    ),
  );
  be.release(flat);
  if (summed !== flat) be.release(summed);
}

/**
 * Hooks into a step. gradReady(name, grad) is called once per parameter, in the order backward
 * finishes them, right after the last kernel that writes the gradient is issued (encoded, not yet
 * submitted): wout, wdown, wfc1, g2, wo, wqkv, g1, emb; under SP with the norm-gradient all-reduce,
 * g2 and g1 come last, after it (finalize_model_grads). Data parallel issues a bucket's sync here
 * (Megatron's backward post-hook, distributed_data_parallel.py _make_backward_post_hook).
 */
export interface LayerStepHooks<T> {
  gradReady?(name: WeightName, grad: T): void;
}

/** Called with the names of the gradients a pass has just finished (their last writing kernel issued). */
export type GradsReady = (...names: WeightName[]) => void;

/** Under SP the norm gains' gradients are final only after finalizeNormGrads. */
const normsFinalized = (c: LayerConfig): boolean => c.sp && c.tp > 1 && !c.skipSpNormGradAllReduce;

function need<T>(v: T | undefined, what: string): T {
  if (v === undefined) throw new Error(`layerStep: missing ${what}.`);
  return v;
}

/** Frees each distinct tensor given (autograd's rule: once the last op that reads it is issued). */
function freeAll<T>(be: Backend<T>, ...ts: (T | undefined)[]): void {
  for (const t of new Set(ts)) if (t !== undefined) be.release(t);
}

/** SP: f and g's sequence-parallel forms; the norms and residuals work on this rank's tokens. */
function regionOf(c: LayerConfig) {
  const sp = c.sp && c.tp > 1;
  return { sp, ...tensorParallelRegion(sp), tokens: sp ? ('sequence' as const) : ('replicated' as const) };
}

/** The layer's own weights (the block's, without the embedding and the output layer). */
function blockWeights<T>(w: WeightSet<T>) {
  return {
    wq: need(w.wqkv, 'wqkv'),
    wo: need(w.wo, 'wo'),
    g1: need(w.g1, 'g1'),
    g2: need(w.g2, 'g2'),
    wfc1: need(w.wfc1, 'wfc1'),
    wdown: need(w.wdown, 'wdown'),
  };
}

/** What attentionHalfForward keeps for attentionHalfBackward (x: the block's input, freed by its backward). */
export interface AttentionSaved<T> {
  readonly x: T;
  readonly ln1: T;
  readonly rstd1: T;
  readonly ln1Full: T;
  readonly attn: Awaited<ReturnType<typeof attentionForward<T>>>['saved'];
  readonly gathered: ReturnType<typeof gatheredQkv> | undefined;
}

/** What blockForward keeps for blockBackward. */
export interface BlockSaved<T> extends AttentionSaved<T> {
  readonly x2: T;
  readonly ln2: T;
  readonly rstd2: T;
  readonly mlp: Awaited<ReturnType<typeof mlpBlockForward<T>>>['saved'];
  readonly chunks: number;
}

/** A weight gradient of the step, allocated on first use (zeros) in `grads`. */
function gradOf<T>(be: Backend<T>, grads: WeightSet<T>) {
  return (name: keyof WeightSet<T>, shape: readonly number[]): T => (grads[name] = be.tensor(`d.${name}`, shape));
}

/**
 * The vocab-parallel embedding, forward: ids [s, b] → x [sl, b, h] (masked lookup of this rank's
 * rows, then g = all-reduce, or reduce-scatter with SP). Takes ownership of ids (freed by embedBackward).
 */
export async function embedForward<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  c: LayerConfig,
  own: RankOwnership,
  w: WeightSet<T>,
  ids: T,
): Promise<T> {
  const { s, b, h } = localDims(c);
  const { leave } = regionOf(c);
  const e = be.tensor('embed', [s, b, h]);
  be.kernel(opSpec('embed', 'vocab', { weight: 'emb' }), embeddingKernel, [ids, need(w.emb, 'emb'), e], {
    vocabStart: own.vocab[0],
  });
  const x = await lc.forward(opSpec('embed.reduce', 'vocab'), leave, e);
  if (x !== e) be.release(e);
  return x;
}

/**
 * The attention half of a pre-norm block on one TP rank, forward (layout [s, b, h]):
 *   x2 = x + g(Attention(f(RMSNorm(x))))      f: identity, or all-gather dim 0 with SP
 *                                              (groups < t: QKV all-gathered along the last dim inside)
 *                                              g: all-reduce, or reduce-scatter dim 0 with SP
 * x [sl, b, h] is kept for the backward (freed there); x2 [sl, b, h] is the caller's.
 */
export async function attentionHalfForward<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  c: LayerConfig,
  own: RankOwnership,
  w: WeightSet<T>,
  x: T,
): Promise<{ x2: T; saved: AttentionSaved<T> }> {
  const D = localDims(c);
  const { sl, b, h } = D;
  const { sp, enter, leave, tokens } = regionOf(c);
  const wq = need(w.wqkv, 'wqkv');
  const wo = need(w.wo, 'wo');
  be.phase = lc.phase = 'forward';
  const { n: ln1, rstd: rstd1 } = preNorm(be, c, 'ln1', x, need(w.g1, 'g1'));
  const ln1Full = sp ? await lc.forward(opSpec('ln1.gather', 'sequence'), enter, ln1) : ln1;
  const gathered = gathersQkv(c) ? gatheredQkv(c, own.rank) : undefined;
  const attn = await attentionForward(be, lc, D, gathered, ln1Full, wq, wo, c.ropeBase);
  if (sp) be.release(ln1Full);
  const attnOut = await lc.forward(opSpec('attn.reduce', 'row'), leave, attn.out);
  const x2 = be.tensor('residual.attn', [sl, b, h]);
  be.kernel(opSpec('residual.attn', tokens), addKernel, [x, attnOut, x2], {});
  freeAll(be, attn.out, attnOut);
  return { x2, saved: { x, ln1, rstd1, ln1Full, attn: attn.saved, gathered } };
}

/** A pre-norm of the block on this rank's tokens: n = RMSNorm(x; g) [sl, b, h] and its 1/rms [sl, b]. */
export function preNorm<T>(
  be: Backend<T>,
  c: LayerConfig,
  site: keyof typeof blockNorms,
  x: T,
  g: T,
): { n: T; rstd: T } {
  const { sl, b, h } = localDims(c);
  const { norm, weight } = blockNorms[site];
  const n = be.tensor(norm, [sl, b, h]);
  const rstd = be.tensor(`${norm}.rstd`, [sl, b]);
  be.kernel(opSpec(norm, regionOf(c).tokens, { weight }), rmsnormKernel, [x, g, n, rstd], { eps: c.eps });
  return { n, rstd };
}

/**
 * One pre-norm transformer block on one TP rank, forward (layout [s, b, h]; SP = sequence parallel):
 *   a = x + g(Attention(f(RMSNorm(x))))        attentionHalfForward
 *   y = a + g(MLP(f(RMSNorm(a))))              g: all-reduce, or reduce-scatter dim 0 with SP
 * x [sl, b, h] is kept for the backward (freed there); y [sl, b, h] is the caller's.
 */
export async function blockForward<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  c: LayerConfig,
  own: RankOwnership,
  w: WeightSet<T>,
  x: T,
): Promise<{ y: T; saved: BlockSaved<T> }> {
  const D = localDims(c);
  const { sl, b, h } = D;
  const { sp, tokens } = regionOf(c);
  const { g2, wfc1, wdown } = blockWeights(w);
  const half = await attentionHalfForward(be, lc, c, own, w, x);
  const { x2 } = half;
  const { n: ln2, rstd: rstd2 } = preNorm(be, c, 'ln2', x2, g2);
  const chunks = c.tp > 1 ? tpOverlapChunks(c) : 1;
  const mlp =
    chunks > 1
      ? await mlpBlockForwardChunked(be, lc, D, sp, chunks, ln2, { wfc1, wdown }, mlpLabels)
      : await mlpBlockForward(be, lc, D, sp, ln2, { wfc1, wdown }, mlpLabels);
  const y = be.tensor('y', [sl, b, h]);
  be.kernel(opSpec('residual.mlp', tokens), addKernel, [x2, mlp.out, y], {});
  be.release(mlp.out);
  return { y, saved: { ...half.saved, x2, ln2, rstd2, mlp: mlp.saved, chunks } };
}

/** What lossForward keeps for lossBackward. */
export interface LossSaved<T> {
  readonly y: T;
  readonly yFull: T;
  readonly logits: T;
  readonly targets: T;
  readonly max: T;
  readonly sum: T;
}

/**
 * The output layer and the loss, forward: y [sl, b, h] → logits = y·W_out (ColumnParallelLinear
 * over the vocabulary) → loss = vocab-parallel CE [s, b]. Takes ownership of targets; the caller
 * keeps y (under SP it is re-gathered for the wgrad).
 */
export async function lossForward<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  c: LayerConfig,
  own: RankOwnership,
  w: WeightSet<T>,
  y: T,
  targets: T,
): Promise<{ loss: T; saved: LossSaved<T> }> {
  const D = localDims(c);
  const { sp, enter } = regionOf(c);
  const yFull = sp ? await lc.forward(opSpec('logits.gather', 'sequence'), enter, y) : y;
  const logits = outputLayer(be, D, yFull, need(w.wout, 'wout'));
  // Under SP the output layer keeps only its [s/t, b, h] input shard (y) and re-gathers it for wgrad.
  if (sp) be.release(yFull);
  const ce = await vocabParallelLoss(be, lc, D, logits, targets, own.vocab[0]);
  return { loss: ce.loss, saved: { y, yFull, logits, targets, max: ce.max, sum: ce.sum } };
}

/** Backward of lossForward: the mean loss's gradient → dy [sl, b, h], with dW_out written into `grads`. */
export async function lossBackward<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  c: LayerConfig,
  own: RankOwnership,
  w: WeightSet<T>,
  saved: LossSaved<T>,
  grads: WeightSet<T>,
  ready: GradsReady = () => {},
): Promise<T> {
  const D = localDims(c);
  const { sp, enter } = regionOf(c);
  const { y, yFull, logits, targets, max, sum } = saved;
  const wout = need(w.wout, 'wout');
  be.phase = lc.phase = 'backward';
  const yAgain = regather(lc, 'logits.regather', enter, y);
  const out = outputLayerBackward(
    be,
    D,
    logits,
    targets,
    max,
    sum,
    wout,
    gradOf(be, grads)('wout', be.shapeOf(wout)),
    own.vocab[0],
    sp ? yAgain.issue : undefined,
  );
  freeAll(be, logits, targets, max, sum); // last read by loss.backward
  const yForWgrad = sp ? await yAgain.wait() : yFull;
  const reduced = lc.backward(opSpec('logits.dgrad.reduce', 'column', { async: true }), enter, out.dy);
  out.wgrad(yForWgrad);
  ready('wout');
  if (sp) be.release(yForWgrad);
  const dy = await reduced;
  if (dy !== out.dy) be.release(out.dy);
  return dy;
}

/**
 * Backward of blockForward with the conjugate collectives (f ↔ g), the re-gather of the norm
 * outputs for wgrad under SP: dy [sl, b, h] → dx [sl, b, h], the block's weight gradients written
 * into `grads`. Frees dy and what the forward saved; returns dx2 (the attention residual's
 * gradient), which the caller frees once the step no longer needs it.
 */
export async function blockBackward<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  c: LayerConfig,
  w: WeightSet<T>,
  saved: BlockSaved<T>,
  dy: T,
  grads: WeightSet<T>,
  ready: GradsReady = () => {},
): Promise<{ dx: T; dx2: T }> {
  const D = localDims(c);
  const { sp } = regionOf(c);
  const { wfc1, wdown } = blockWeights(w);
  const { x2, ln2, rstd2, mlp, chunks } = saved;
  const grad = gradOf(be, grads);
  be.phase = lc.phase = 'backward';

  // ---- backward: MLP block (y = x2 + g(mlp)) ----
  const dw = { wfc1: grad('wfc1', be.shapeOf(wfc1)), wdown: grad('wdown', be.shapeOf(wdown)) };
  // Without SP the chunks cut only the forward all-reduce: the backward's dgrad all-reduce already runs under the wgrad.
  const { dOut, dx: dln2 } =
    chunks > 1 && sp
      ? await mlpBlockBackwardChunked(be, lc, D, chunks, dy, mlp, { wfc1, wdown }, dw, mlpLabels)
      : await mlpBlockBackward(be, lc, D, sp, dy, mlp, { wfc1, wdown }, dw, mlpLabels);
  ready('wdown', 'wfc1');
  freeAll(be, ln2, mlp.input, mlp.mlp.gate, mlp.mlp.up, mlp.mlp.act);
  if (dOut !== dy) be.release(dOut); // SP: dY all-gathered
  const dx2 = mlpNormBackward(be, c, w, { x2, rstd2, dln2, dy }, grads, ready);
  be.release(dy);
  return { dx: await attentionHalfBackward(be, lc, c, w, saved, dx2, grads, ready), dx2 };
}

/**
 * Backward of the MLP half's pre-norm and residual, y = x2 + MLP(RMSNorm(x2; g2)): from dln2 (the
 * MLP's input gradient) and dy, dx2 = RMSNorm backward + dy and dg2 into `grads`. Frees x2, rstd2
 * and dln2 (dy stays the caller's); returns dx2.
 */
export function mlpNormBackward<T>(
  be: Backend<T>,
  c: LayerConfig,
  w: WeightSet<T>,
  t: { readonly x2: T; readonly rstd2: T; readonly dln2: T; readonly dy: T },
  grads: WeightSet<T>,
  ready: GradsReady = () => {},
): T {
  const g = need(w.g2, 'g2');
  return normBackward(be, c, gradOf(be, grads), ready, blockNorms.ln2, {
    x: t.x2,
    g,
    rstd: t.rstd2,
    dn: t.dln2,
    dOut: t.dy,
  });
}

/**
 * Backward of attentionHalfForward with the conjugate collectives (f ↔ g) and the re-gather of ln1
 * for wgrad under SP: dx2 [sl, b, h] → dx [sl, b, h], dW_qkv, dW_o and dg1 written into `grads`.
 * Frees what the forward saved; dx2 stays the caller's.
 */
export async function attentionHalfBackward<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  c: LayerConfig,
  w: WeightSet<T>,
  saved: AttentionSaved<T>,
  dx2: T,
  grads: WeightSet<T>,
  ready: GradsReady = () => {},
): Promise<T> {
  const D = localDims(c);
  const { sp, enter, leave } = regionOf(c);
  const wq = need(w.wqkv, 'wqkv');
  const wo = need(w.wo, 'wo');
  const { x, ln1, rstd1, attn, gathered } = saved;
  const grad = gradOf(be, grads);
  be.phase = lc.phase = 'backward';
  const dattn = sp ? await lc.backward(opSpec('attn.reduce.backward', 'sequence'), leave, dx2) : dx2;
  const ln1Again = regather(lc, 'ln1.regather', enter, ln1);
  const ab = await attentionBackward(
    be,
    lc,
    D,
    gathered,
    dattn,
    attn,
    wq,
    wo,
    grad('wqkv', be.shapeOf(wq)),
    grad('wo', be.shapeOf(wo)),
    c.ropeBase,
    sp ? ln1Again.issue : undefined,
  );
  ready('wo');
  freeAll(be, attn.q, attn.k, attn.v, attn.p, attn.ctx);
  if (dattn !== dx2) be.release(dattn);
  const ln1Full = sp ? await ln1Again.wait() : saved.ln1Full;
  const dln1Pending = lc.backward(opSpec('attn.dgrad.reduce', 'column', { async: true }), enter, ab.dx);
  ab.wgrad(ln1Full);
  ready('wqkv');
  freeAll(be, ln1, ln1Full); // under SP ln1Full is the re-gathered copy
  const dln1 = await dln1Pending;
  if (dln1 !== ab.dx) be.release(ab.dx);
  return normBackward(be, c, grad, ready, blockNorms.ln1, { x, g: need(w.g1, 'g1'), rstd: rstd1, dn: dln1, dOut: dx2 });
}

/** The block's two pre-norms: op and gain names, the residual add each backward passes, its dx's tensor name. */
const blockNorms = {
  ln1: { norm: 'ln1', weight: 'g1', residual: 'residual.attn', dx: 'd.x' },
  ln2: { norm: 'ln2', weight: 'g2', residual: 'residual.mlp', dx: 'd.residual.attn' },
} as const;

/**
 * Backward of one pre-norm and its residual, out = x + f(n), n = rmsnorm(x; g), tensors [sl, b, h]:
 *   dx = rmsnorm backward(x, g, rstd; dn) + dOut,   d<g> = Σ_tokens dn ⊙ x·rstd (into grads),
 * the gain reported ready unless SP finalizes it later (normsFinalized). Frees x, rstd and dn (dOut
 * stays the caller's); returns dx.
 */
function normBackward<T>(
  be: Backend<T>,
  c: LayerConfig,
  grad: ReturnType<typeof gradOf<T>>,
  ready: GradsReady,
  site: (typeof blockNorms)[keyof typeof blockNorms],
  t: { readonly x: T; readonly g: T; readonly rstd: T; readonly dn: T; readonly dOut: T },
): T {
  const { tokens } = regionOf(c);
  const { weight } = site;
  const eps = { eps: c.eps };
  const dx = be.tensor(site.dx, be.shapeOf(t.x));
  be.kernel(
    opSpec(`${site.norm}.backward`, tokens, { weight }),
    rmsnormBackwardKernel,
    [t.x, t.g, t.rstd, t.dn, dx],
    eps,
  );
  be.kernel(opSpec(`${site.residual}.backward`, tokens), addInPlaceKernel, [dx, t.dOut], {});
  be.kernel(
    opSpec(`${site.norm}.wgrad`, tokens, { weight }),
    rmsnormWeightGradKernel,
    [t.x, t.rstd, t.dn, grad(weight, be.shapeOf(t.g))],
    eps,
  );
  if (!normsFinalized(c)) ready(weight);
  freeAll(be, t.x, t.rstd, t.dn);
  return dx;
}

/**
 * Backward of embedForward: dx [sl, b, h] → (SP: all-gather) → dEmb of this rank's rows written into
 * `grads`. Frees ids and dx.
 */
export async function embedBackward<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  c: LayerConfig,
  own: RankOwnership,
  w: WeightSet<T>,
  ids: T,
  dx: T,
  grads: WeightSet<T>,
  ready: GradsReady = () => {},
): Promise<void> {
  const { sp, leave } = regionOf(c);
  const dxFull = sp ? await lc.backward(opSpec('embed.reduce.backward', 'sequence'), leave, dx) : dx;
  const emb = need(w.emb, 'emb');
  be.kernel(
    opSpec('embed.wgrad', 'vocab', { weight: 'emb' }),
    embeddingBackwardKernel,
    [ids, dxFull, gradOf(be, grads)('emb', be.shapeOf(emb))],
    { vocabStart: own.vocab[0] },
  );
  ready('emb');
  freeAll(be, ids, dx, dxFull);
}

/**
 * Megatron's finalize_model_grads for a block's replicated RMSNorm gains under SP (see
 * finalizeNormGrads); nothing without SP or with the demonstration switch on.
 */
export async function finalizeBlockGrads<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  c: LayerConfig,
  grads: WeightSet<T>,
): Promise<void> {
  if (normsFinalized(c)) await finalizeNormGrads(be, lc, c.h, need(grads.g1, 'dg1'), need(grads.g2, 'dg2'));
}

/**
 * One training step of a pre-norm transformer layer on one TP rank, forward and backward, as
 * Megatron-LM does it (layout [s, b, h]; t ranks; SP = sequence parallel):
 *   x ← embed(ids) (vocab-parallel: masked lookup, then g = all-reduce, or reduce-scatter with SP)
 *   y = block(x)                               (blockForward)
 *   loss = vocab-parallel CE(y·W_out)
 * and the backward with the conjugate collectives (f ↔ g), the re-gather of the norm outputs
 * for wgrad under SP, and the all-reduce of the replicated RMSNorm weight gradients under SP.
 */
export async function layerStep<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  c: LayerConfig,
  own: RankOwnership,
  w: WeightSet<T>,
  inputs: StepInputs,
  hooks: LayerStepHooks<T> = {},
): Promise<StepResult<T>> {
  const { s, b, h, sl } = localDims(c);
  const grads: WeightSet<T> = {};
  const ready: GradsReady = (...names) => names.forEach((n) => hooks.gradReady?.(n, need(grads[n], `d${n}`)));
  be.phase = lc.phase = 'forward';
  let ids: T | undefined;
  const x =
    c.vocab > 0
      ? await embedForward(be, lc, c, own, w, (ids = be.tensor('ids', [s, b], need(inputs.ids, 'ids'))))
      : be.tensor('x', [sl, b, h], tokenSlice(need(inputs.x, 'x'), s, own.tokens));
  const { y, saved } = await blockForward(be, lc, c, own, w, x);
  let loss: T | undefined;
  let dy: T;
  if (c.vocab > 0) {
    const targets = be.tensor('targets', [s, b], need(inputs.targets, 'targets'));
    const head = await lossForward(be, lc, c, own, w, y, targets);
    loss = head.loss;
    dy = await lossBackward(be, lc, c, own, w, head.saved, grads, ready);
  } else {
    be.phase = lc.phase = 'backward';
    dy = be.tensor('dy', [sl, b, h], tokenSlice(need(inputs.dy, 'dy'), s, own.tokens));
  }
  const { dx, dx2 } = await blockBackward(be, lc, c, w, saved, dy, grads, ready);
  if (c.vocab > 0) {
    await embedBackward(be, lc, c, own, w, need(ids, 'ids'), dx, grads, ready);
  }
  be.release(dx2); // dx is the step's result without a vocabulary
  await finalizeBlockGrads(be, lc, c, grads);
  if (normsFinalized(c)) ready('g2', 'g1');
  await be.flush();
  return { y, loss, dx: c.vocab > 0 ? undefined : dx, grads };
}
