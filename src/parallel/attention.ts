import { opSpec, type Backend, type OpSpec } from './backend.ts';
import type { LocalDims } from './dims.ts';
import type { LayerComm } from './layer-comm.ts';
import { gemmProblem, linearDgrad, linearForward, linearWgrad, type LinearSpec } from './linear.ts';
import type { GatheredQkv } from './qkv-layout.ts';
import { qkvBackward, qkvForward } from './qkv.ts';
import { ropeBackwardKernel, ropeKernel } from '../reference/rope.ts';
import { softmaxBackwardKernel, softmaxKernel } from '../reference/softmax.ts';

/** The attention's output projection linear_proj (linear_qkv is in qkv.ts). */
export const attnProj: LinearSpec = {
  label: 'attn.proj',
  product: 'proj',
  weight: 'wo',
  split: 'row',
  megatron: 'RowParallelLinear (linear_proj)',
};

/**
 * Self-attention on one rank, Megatron-Core's SelfAttention with t = TP degree: linear_qkv is a
 * ColumnParallelLinear giving this rank's nq query heads and nkv KV groups (qkv.ts; with groups < t
 * through an all-gather of the QKV activations), RoPE on Q and K at global positions, causal
 * softmax(QKᵀ/√d)·V per head (each query head reads KV group ⌊head/ratio⌋), and linear_proj a
 * RowParallelLinear whose [s, b, h] result is a partial sum (the caller reduces it).
 * Layouts: Q [s, b, nq, d], K and V [s, b, nkv, d], scores P [b, nq, s, s].
 */
export interface AttentionSaved<T> {
  readonly q: T;
  readonly k: T;
  readonly v: T;
  readonly p: T;
  readonly ctx: T;
}

/** What the attention backward leaves for the caller: the partial dX and the QKV wgrads to run. */
export interface AttentionGrads<T> {
  readonly dx: T;
  wgrad(x: T): void;
}

/** Strides of head z's [s, d] matrix inside a [s, b, heads, d] tensor, batch row bi. */
const heads = (D: LocalDims, n: number, bi: number) => ({ off: bi * n * D.d, row: D.b * n * D.d, head: D.d });

/** A head-strided view as `heads` gives it. */
type HeadView = ReturnType<typeof heads>;

/**
 * C_z = A_z·B_{z/ratio} for every query head z of batch row bi: A the [s, s] per-head matrices of
 * `[b·nq, s, s]` (scores or their gradient), B a KV-group view shared by ratio heads, C a query-head
 * view; [s, s]·[s, d] → [s, d] per head.
 */
function scoresTimesHeads<T>(
  be: Backend<T>,
  op: OpSpec,
  D: LocalDims,
  bi: number,
  a: T,
  b: T,
  B: HeadView,
  c: T,
  C: HeadView,
): void {
  const { s, d, nq, ratio } = D;
  be.gemm(
    op,
    gemmProblem({
      M: s,
      N: d,
      K: s,
      batch: nq,
      offA: bi * nq * s * s,
      sAm: s,
      sAk: 1,
      bsA: s * s,
      offB: B.off,
      sBk: B.row,
      sBn: 1,
      bsB: B.head,
      divB: ratio,
      offC: C.off,
      sCm: C.row,
      bsC: C.head,
    }),
    a,
    b,
    c,
  );
}

/**
 * Forward: x [s, b, h] (full sequence) → partial output [s, b, h] of this rank's heads. `gathered`
 * (groups < t) says where this rank's Q, K, V lie in the all-gathered QKV; lc issues that gather.
 */
export async function attentionForward<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  D: LocalDims,
  gathered: GatheredQkv | undefined,
  x: T,
  wqkv: T,
  wo: T,
  ropeBase: number,
): Promise<{ out: T; saved: AttentionSaved<T> }> {
  const { s, b, h, d, nq, nkv, ratio } = D;
  const m = s * b;
  const { q: qRaw, k: kRaw, v } = await qkvForward(be, lc, D, gathered, x, wqkv);
  const q = be.tensor('q', [s, b, nq, d]);
  const k = be.tensor('k', [s, b, nkv, d]);
  be.kernel(opSpec('rope.q', 'heads'), ropeKernel, [qRaw, q], { base: ropeBase, positionOffset: 0 });
  be.kernel(opSpec('rope.k', 'heads'), ropeKernel, [kRaw, k], { base: ropeBase, positionOffset: 0 });
  be.release(qRaw);
  be.release(kRaw);
  const scores = be.tensor('scores', [b * nq, s, s]);
  for (let bi = 0; bi < b; bi++) {
    const Q = heads(D, nq, bi),
      K = heads(D, nkv, bi);
    // S_z = Q_z·K_{z/ratio}ᵀ: [s, d]·[d, s] per head z
    be.gemm(
      opSpec('attn.scores', 'heads', { gemm: { product: 'scores', computes: 'C' } }),
      gemmProblem({
        M: s,
        N: s,
        K: d,
        batch: nq,
        offA: Q.off,
        sAm: Q.row,
        sAk: 1,
        bsA: Q.head,
        offB: K.off,
        sBk: 1,
        sBn: K.row,
        bsB: K.head,
        divB: ratio,
        offC: bi * nq * s * s,
        sCm: s,
        bsC: s * s,
      }),
      q,
      k,
      scores,
    );
  }
  const p = be.tensor('probs', [b * nq, s, s]);
  be.kernel(opSpec('attn.softmax', 'heads'), softmaxKernel, [scores, p], {
    scale: 1 / Math.sqrt(d),
    causal: true,
    rowOffset: 0,
  });
  be.release(scores);
  const ctx = be.tensor('context', [s, b, nq, d]);
  for (let bi = 0; bi < b; bi++) {
    const O = heads(D, nq, bi),
      V = heads(D, nkv, bi);
    // O_z = P_z·V_{z/ratio}: [s, s]·[s, d] per head z
    scoresTimesHeads(
      be,
      opSpec('attn.context', 'heads', { gemm: { product: 'context', computes: 'C' } }),
      D,
      bi,
      p,
      v,
      V,
      ctx,
      O,
    );
  }
  const out = be.tensor('attn.out', [s, b, h]);
  linearForward(be, attnProj, ctx, wo, out, m, nq * d, { w: h, c0: 0, n: h });
  return { out, saved: { q, k, v, p, ctx } };
}

/**
 * Backward: dOut [s, b, h] (full) → this rank's partial dX [s, b, h] (the caller all-reduces or
 * reduce-scatters it) and dwo; `wgrad(x)` then writes the QKV wgrads into dwqkv, x being the
 * attention input [s, b, h] (re-gathered under SP) — split so the reduction of dX can overlap
 * them. With groups < t the gradient of the gathered QKV is reduce-scattered first (qkv.ts).
 * `beforeDgrad` (under SP) is called right before the QKV dgrad GEMMs: the caller issues the
 * re-gather of the attention input there, as Megatron does, and those GEMMs run under it.
 */
export async function attentionBackward<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  D: LocalDims,
  gathered: GatheredQkv | undefined,
  dOut: T,
  saved: AttentionSaved<T>,
  wqkv: T,
  wo: T,
  dwqkv: T,
  dwo: T,
  ropeBase: number,
  beforeDgrad?: () => void,
): Promise<AttentionGrads<T>> {
  const { s, b, h, d, nq, nkv, ratio } = D;
  const m = s * b;
  const { q, k, v, p, ctx } = saved;
  const dctx = be.tensor('d.context', [s, b, nq, d]);
  linearDgrad(be, attnProj, dOut, wo, dctx, m, nq * d, { w: h, c0: 0, n: h });
  linearWgrad(be, attnProj, ctx, dOut, dwo, m, nq * d, { w: h, c0: 0, n: h });
  const dp = be.tensor('d.probs', [b * nq, s, s]);
  const dv = be.tensor('d.v', [s, b, nkv, d]);
  for (let bi = 0; bi < b; bi++) {
    const O = heads(D, nq, bi),
      V = heads(D, nkv, bi);
    // dP_z = dO_z·V_{z/ratio}ᵀ
    be.gemm(
      opSpec('attn.context.dgrad', 'heads', { gemm: { product: 'context', computes: 'dA' } }),
      gemmProblem({
        M: s,
        N: s,
        K: d,
        batch: nq,
        offA: O.off,
        sAm: O.row,
        sAk: 1,
        bsA: O.head,
        offB: V.off,
        sBk: 1,
        sBn: V.row,
        bsB: V.head,
        divB: ratio,
        offC: bi * nq * s * s,
        sCm: s,
        bsC: s * s,
      }),
      dctx,
      v,
      dp,
    );
    // dV_g = Σ_{z: z/ratio = g} P_zᵀ·dO_z, one batched GEMM over groups per head-in-group
    for (let rr = 0; rr < ratio; rr++) {
      be.gemm(
        opSpec('attn.context.vgrad', 'heads', { gemm: { product: 'context', computes: 'dB' } }),
        gemmProblem({
          M: s,
          N: d,
          K: s,
          batch: nkv,
          offA: bi * nq * s * s + rr * s * s,
          sAm: 1,
          sAk: s,
          bsA: ratio * s * s,
          offB: O.off + rr * d,
          sBk: O.row,
          sBn: 1,
          bsB: ratio * d,
          offC: V.off,
          sCm: V.row,
          bsC: V.head,
          accumulate: rr > 0,
        }),
        p,
        dctx,
        dv,
      );
    }
  }
  be.release(dctx);
  const ds = be.tensor('d.scores', [b * nq, s, s]);
  be.kernel(opSpec('attn.softmax.backward', 'heads'), softmaxBackwardKernel, [p, dp, ds], { scale: 1 / Math.sqrt(d) });
  be.release(dp);
  const dq = be.tensor('d.q', [s, b, nq, d]);
  const dk = be.tensor('d.k', [s, b, nkv, d]);
  for (let bi = 0; bi < b; bi++) {
    const Q = heads(D, nq, bi),
      K = heads(D, nkv, bi);
    // dQ_z = dS_z·K_{z/ratio}
    scoresTimesHeads(
      be,
      opSpec('attn.scores.qgrad', 'heads', { gemm: { product: 'scores', computes: 'dA' } }),
      D,
      bi,
      ds,
      k,
      K,
      dq,
      Q,
    );
    // dK_g = Σ_{z: z/ratio = g} dS_zᵀ·Q_z
    for (let rr = 0; rr < ratio; rr++) {
      be.gemm(
        opSpec('attn.scores.kgrad', 'heads', { gemm: { product: 'scores', computes: 'dB' } }),
        gemmProblem({
          M: s,
          N: d,
          K: s,
          batch: nkv,
          offA: bi * nq * s * s + rr * s * s,
          sAm: 1,
          sAk: s,
          bsA: ratio * s * s,
          offB: Q.off + rr * d,
          sBk: Q.row,
          sBn: 1,
          bsB: ratio * d,
          offC: K.off,
          sCm: K.row,
          bsC: K.head,
          accumulate: rr > 0,
        }),
        ds,
        q,
        dk,
      );
    }
  }
  be.release(ds);
  const dqRaw = be.tensor('d.q.raw', [s, b, nq, d]);
  const dkRaw = be.tensor('d.k.raw', [s, b, nkv, d]);
  be.kernel(opSpec('rope.q.backward', 'heads'), ropeBackwardKernel, [dq, dqRaw], { base: ropeBase, positionOffset: 0 });
  be.kernel(opSpec('rope.k.backward', 'heads'), ropeBackwardKernel, [dk, dkRaw], { base: ropeBase, positionOffset: 0 });
  be.release(dq);
  be.release(dk);
  return qkvBackward(be, lc, D, gathered, { q: dqRaw, k: dkRaw, v: dv }, wqkv, dwqkv, beforeDgrad);
}
