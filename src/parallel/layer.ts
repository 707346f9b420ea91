import { attentionBackward, attentionForward } from './attention.ts';
import { opSpec, type Backend } from './backend.ts';
import type { LayerConfig } from './config.ts';
import { localDims } from './dims.ts';
import type { LayerComm } from './layer-comm.ts';
import {
  copyToTensorParallelRegion,
  gatherFromSequenceParallelRegion,
  reduceFromTensorParallelRegion,
  reduceScatterToSequenceParallelRegion,
  type MappingPair,
} from './mappings.ts';
import { mlpBackward, mlpForward } from './mlp.ts';
import type { RankOwnership } from './plan-types.ts';
import { outputLayer, outputLayerBackward, vocabParallelLoss } from './vocab.ts';
import type { WeightSet } from './weights.ts';

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

function need<T>(v: T | undefined, what: string): T {
  if (v === undefined) throw new Error(`layerStep: missing ${what}.`);
  return v;
}

/**
 * One training step of a pre-norm transformer layer on one TP rank, forward and backward, as
 * Megatron-LM does it (layout [s, b, h]; t ranks; SP = sequence parallel):
 *   x ← embed(ids) (vocab-parallel: masked lookup, then g = all-reduce, or reduce-scatter with SP)
 *   a = x + g(Attention(f(RMSNorm(x))))        f: identity, or all-gather dim 0 with SP
 *   y = a + g(MLP(f(RMSNorm(a))))              g: all-reduce, or reduce-scatter dim 0 with SP
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
): Promise<StepResult<T>> {
  const D = localDims(c);
  const { s, b, h, sl } = D;
  const v0 = own.vocab[0];
  const sp = c.sp && c.tp > 1;
  // f, g and their SP forms: what enters a TP region and what leaves it.
  const enter: MappingPair = sp ? gatherFromSequenceParallelRegion : copyToTensorParallelRegion;
  const leave: MappingPair = sp ? reduceScatterToSequenceParallelRegion : reduceFromTensorParallelRegion;
  const into = async (name: string, x: T): Promise<T> => (sp ? lc.forward(opSpec(name, 'sequence'), enter, x) : x);
  // Norms and residuals work on this rank's tokens under SP, on the full replicated sequence without.
  const tokens = sp ? 'sequence' : 'replicated';
  const grads: WeightSet<T> = {};
  const grad = (name: keyof WeightSet<T>, shape: readonly number[]): T => (grads[name] = be.tensor(`d.${name}`, shape));
  const wq = need(w.wqkv, 'wqkv'),
    wo = need(w.wo, 'wo'),
    g1 = need(w.g1, 'g1'),
    g2 = need(w.g2, 'g2');
  const wfc1 = need(w.wfc1, 'wfc1'),
    wdown = need(w.wdown, 'wdown');

  // ---- forward ----
  be.phase = lc.phase = 'forward';
  let x: T;
  let ids: T | undefined;
  if (c.vocab > 0) {
    ids = be.tensor('ids', [s, b], need(inputs.ids, 'ids'));
    const e = be.tensor('embed', [s, b, h]);
    be.embedding(opSpec('embed', 'vocab', { weight: 'emb' }), ids, need(w.emb, 'emb'), e, v0);
    x = await lc.forward(opSpec('embed.reduce', 'vocab'), leave, e);
  } else {
    x = be.tensor('x', [sl, b, h], tokenSlice(need(inputs.x, 'x'), s, own.tokens));
  }
  const ln1 = be.tensor('ln1', [sl, b, h]);
  const rstd1 = be.tensor('ln1.rstd', [sl, b]);
  be.rmsnorm(opSpec('ln1', tokens, { weight: 'g1' }), x, g1, ln1, rstd1, c.eps);
  let ln1Full = await into('ln1.gather', ln1);
  const attn = attentionForward(be, D, ln1Full, wq, wo, c.ropeBase);
  if (sp) be.release(ln1Full);
  const attnOut = await lc.forward(opSpec('attn.reduce', 'row'), leave, attn.out);
  const x2 = be.tensor('residual.attn', [sl, b, h]);
  be.add(opSpec('residual.attn', tokens), x, attnOut, x2);
  const ln2 = be.tensor('ln2', [sl, b, h]);
  const rstd2 = be.tensor('ln2.rstd', [sl, b]);
  be.rmsnorm(opSpec('ln2', tokens, { weight: 'g2' }), x2, g2, ln2, rstd2, c.eps);
  let ln2Full = await into('ln2.gather', ln2);
  const mlp = mlpForward(be, D, ln2Full, wfc1, wdown);
  if (sp) be.release(ln2Full);
  const mlpOut = await lc.forward(opSpec('mlp.reduce', 'row'), leave, mlp.out);
  const y = be.tensor('y', [sl, b, h]);
  be.add(opSpec('residual.mlp', tokens), x2, mlpOut, y);

  let loss: T | undefined;
  let dy: T;
  if (c.vocab > 0) {
    const targets = be.tensor('targets', [s, b], need(inputs.targets, 'targets'));
    const yFull = await into('logits.gather', y);
    const wout = need(w.wout, 'wout');
    const logits = outputLayer(be, D, yFull, wout);
    const ce = await vocabParallelLoss(be, lc, D, logits, targets, v0);
    loss = ce.loss;
    // ---- backward from the loss ----
    be.phase = lc.phase = 'backward';
    const out = outputLayerBackward(be, D, logits, targets, ce.max, ce.sum, wout, grad('wout', be.shapeOf(wout)), v0);
    const reduced = lc.backward(opSpec('logits.dgrad.reduce', 'column', { async: true }), enter, out.dy);
    out.wgrad(yFull);
    dy = await reduced;
  } else {
    be.phase = lc.phase = 'backward';
    dy = be.tensor('dy', [sl, b, h], tokenSlice(need(inputs.dy, 'dy'), s, own.tokens));
  }

  // ---- backward: MLP block (y = x2 + g(mlp)) ----
  const dmlp = sp ? await lc.backward(opSpec('mlp.reduce.backward', 'sequence'), leave, dy) : dy;
  const mb = mlpBackward(
    be,
    D,
    dmlp,
    mlp.saved,
    wfc1,
    wdown,
    grad('wfc1', be.shapeOf(wfc1)),
    grad('wdown', be.shapeOf(wdown)),
  );
  ln2Full = sp ? await lc.forward(opSpec('ln2.regather', 'sequence'), enter, ln2) : ln2Full;
  const dln2Pending = lc.backward(opSpec('mlp.dgrad.reduce', 'column', { async: true }), enter, mb.dx);
  mb.wgrad(ln2Full);
  const dln2 = await dln2Pending;
  const dx2 = be.tensor('d.residual.attn', [sl, b, h]);
  be.rmsnormBackward(opSpec('ln2.backward', tokens, { weight: 'g2' }), x2, g2, rstd2, dln2, dx2);
  be.addInPlace(opSpec('residual.mlp.backward', tokens), dx2, dy);
  be.rmsnormWeightGrad(opSpec('ln2.wgrad', tokens, { weight: 'g2' }), x2, rstd2, dln2, grad('g2', [h]));

  // ---- backward: attention block (x2 = x + g(attn)) ----
  const dattn = sp ? await lc.backward(opSpec('attn.reduce.backward', 'sequence'), leave, dx2) : dx2;
  const ab = attentionBackward(
    be,
    D,
    dattn,
    attn.saved,
    wq,
    wo,
    grad('wqkv', be.shapeOf(wq)),
    grad('wo', be.shapeOf(wo)),
    c.ropeBase,
  );
  let replicas;
  if (c.groups < c.tp) {
    // Replicated KV groups: each copy saw only its own heads' gradients; sum them over the replicas.
    const why = 'sum of the KV-group gradients over the ranks that replicate the group (groups < t)';
    const per = c.tp / c.groups;
    const g0 = own.kvGroups[0] * per;
    replicas = {
      dk: await lc.allGather(opSpec('qkv.k.replicas.gather', 'heads', { weight: 'wqkv' }), why, ab.dk, 2),
      dv: await lc.allGather(opSpec('qkv.v.replicas.gather', 'heads', { weight: 'wqkv' }), why, ab.dv, 2),
      ranks: Array.from({ length: per }, (_, j) => g0 + j),
    };
  }
  ln1Full = sp ? await lc.forward(opSpec('ln1.regather', 'sequence'), enter, ln1) : ln1Full;
  const dln1Pending = lc.backward(opSpec('attn.dgrad.reduce', 'column', { async: true }), enter, ab.dx);
  ab.wgrad(ln1Full, replicas);
  const dln1 = await dln1Pending;
  const dx = be.tensor('d.x', [sl, b, h]);
  be.rmsnormBackward(opSpec('ln1.backward', tokens, { weight: 'g1' }), x, g1, rstd1, dln1, dx);
  be.addInPlace(opSpec('residual.attn.backward', tokens), dx, dx2);
  be.rmsnormWeightGrad(opSpec('ln1.wgrad', tokens, { weight: 'g1' }), x, rstd1, dln1, grad('g1', [h]));

  if (sp && !c.skipSpNormGradAllReduce) {
    // The norm weights are replicated but saw different tokens: finalize_model_grads all-reduces them.
    const why = 'finalize_model_grads: all-reduce of the replicated RMSNorm weight gradients under SP';
    be.phase = lc.phase = 'finalize';
    grads.g1 = await lc.allReduce(
      opSpec('ln1.wgrad.reduce', 'sequence', { weight: 'g1', role: 'wgrad' }),
      why,
      need(grads.g1, 'dg1'),
    );
    grads.g2 = await lc.allReduce(
      opSpec('ln2.wgrad.reduce', 'sequence', { weight: 'g2', role: 'wgrad' }),
      why,
      need(grads.g2, 'dg2'),
    );
    be.phase = lc.phase = 'backward';
  }
  if (c.vocab > 0) {
    const dxFull = sp ? await lc.backward(opSpec('embed.reduce.backward', 'sequence'), leave, dx) : dx;
    const emb = need(w.emb, 'emb');
    be.embeddingBackward(
      opSpec('embed.wgrad', 'vocab', { weight: 'emb' }),
      need(ids, 'ids'),
      dxFull,
      grad('emb', be.shapeOf(emb)),
      v0,
    );
  }
  await be.flush();
  return { y, loss, dx: c.vocab > 0 ? undefined : dx, grads };
}
