import { headDim, type LayerConfig } from './config.ts';
import { paddedVocab } from './ownership.ts';
import { qkvOutWidth } from './qkv-layout.ts';

/**
 * A rank's local sizes (t = TP degree): nq = heads/t query heads, nkv KV groups its attention reads
 * (groups/t, or 1 when groups < t: the group it takes from the gathered QKV), ratio = nq/nkv query
 * heads per local KV group, f = ffn/t,
 * vl = paddedVocab/t vocabulary rows, sl = s/t tokens under SP (else s), tokens = s·b.
 */
export interface LocalDims {
  readonly s: number;
  readonly b: number;
  readonly h: number;
  readonly d: number;
  readonly t: number;
  readonly nq: number;
  readonly nkv: number;
  readonly ratio: number;
  readonly f: number;
  readonly vp: number;
  readonly vl: number;
  readonly sl: number;
  /** Width of the fused QKV weight shard: W/t, W = (heads + 2·groups)·d (= (nq + 2·nkv)·d when groups ≥ t). */
  readonly qkvWidth: number;
  /** W = (heads + 2·groups)·d: linear_qkv's full output width (what groups < t all-gathers). */
  readonly qkvFull: number;
}

/** The local sizes of a (valid) configuration. */
export function localDims(c: LayerConfig): LocalDims {
  const vp = paddedVocab(c);
  const t = c.tp;
  const d = headDim(c);
  const nq = c.heads / t;
  const nkv = c.groups >= t ? c.groups / t : 1;
  return {
    s: c.s,
    b: c.b,
    h: c.h,
    d,
    t,
    nq,
    nkv,
    ratio: nq / nkv,
    f: c.ffn / t,
    vp,
    vl: vp / t,
    sl: c.sp ? c.s / t : c.s,
    qkvWidth: qkvOutWidth(c) / t,
    qkvFull: qkvOutWidth(c),
  };
}
