import type { TrainDtype } from '../../hardware/dtype.ts';
import { dtypeBytes } from '../../hardware/dtype.ts';
import { flashAttentionUs, type AttentionKernel } from '../../hardware/flash-attention.ts';
import type { GemmPrecision, GpuSpec } from '../../hardware/gpus.ts';
import { gemmTime, memoryBoundUs, type GemmShape } from '../../hardware/kernel-time.ts';
import type { KernelClock } from '../../hardware/sustained-clock.ts';
import { mlaQkHeadWidth, type MlaSetup } from '../../megatron/mla.ts';
import { causalFraction } from './priced-ops.ts';

/** One MLA layer's shapes on one rank, per micro-batch. */
export interface MlaShapes {
  /** s: the sequence this rank attends over (s/cp under context parallelism). */
  readonly seq: number;
  /** b: micro-batch size. */
  readonly batch: number;
  readonly hidden: number;
  readonly heads: number;
  readonly tp: number;
  /** --sequence-parallel (the layer's input sharded over the sequence when t > 1). */
  readonly sp: boolean;
  readonly mla: MlaSetup;
}

/** The GEMMs of an MLA layer (multi_latent_attention.py, core_v0.19.0). */
export type MlaGemm = 'q-down' | 'q-proj' | 'kv-down' | 'q-up' | 'kv-up' | 'proj';

/** One forward GEMM of the layer on one rank: C[M, N] = A[M, K]·B[K, N]. */
export interface MlaGemmShape {
  readonly gemm: MlaGemm;
  readonly shape: GemmShape;
  /** How the weight is split over TP: duplicated (every rank holds it all), column or row. */
  readonly split: 'duplicated' | 'column' | 'row';
}

/** Rows of the layer on one rank: S = s·b gathered, T = S/t held (SP, t > 1) or S. */
export function mlaRows(x: MlaShapes): { gathered: number; held: number } {
  const gathered = x.seq * x.batch;
  return { gathered, held: x.sp && x.tp > 1 ? gathered / x.tp : gathered };
}

/**
 * The forward GEMMs of one MLA layer on one rank, as the default spec builds them
 * (gpt_layer_specs.py:106-130: backend.linear() for the down projections, column-parallel
 * up projections, row-parallel linear_proj), n heads, d_q = d_nope + d_rope:
 *   q-down   [T, h]·[h, q_lora]                duplicated (TELinear parallel_mode='duplicated',
 *                                              multi_latent_attention.py:524-526): no TP split, on
 *                                              the rows the rank holds (T = S/t under SP)
 *   q-proj   [S, h]·[h, n/t·d_q]               column, in place of q-down and q-up without --q-lora-rank (:507-520)
 *   kv-down  [T, h]·[h, kv_lora + d_rope]      duplicated (:570-600)
 *   q-up     [S, q_lora]·[q_lora, n/t·d_q]     column (:556-567); its input gathered over the sequence under SP
 *   kv-up    [S, kv_lora]·[kv_lora, n/t·(d_nope + d_v)]  column (:603-615)
 *   proj     [S, n/t·d_v]·[n/t·d_v, h]         row (:221-233)
 */
export function mlaGemms(x: MlaShapes): MlaGemmShape[] {
  const { gathered: S, held: T } = mlaRows(x);
  const m = x.mla;
  const n = x.heads / x.tp;
  const dq = mlaQkHeadWidth(m);
  const g = (gemm: MlaGemm, M: number, K: number, N: number, split: MlaGemmShape['split']): MlaGemmShape => ({
    gemm,
    shape: { M, N, K, batch: 1 },
    split,
  });
  const q =
    m.qLoraRank === undefined
      ? [g('q-proj', S, x.hidden, n * dq, 'column')]
      : [g('q-down', T, x.hidden, m.qLoraRank, 'duplicated'), g('q-up', S, m.qLoraRank, n * dq, 'column')];
  return [
    ...q,
    g('kv-down', T, x.hidden, m.kvLoraRank + m.qkPosEmbHeadDim, 'duplicated'),
    g('kv-up', S, m.kvLoraRank, n * (m.qkHeadDim + m.vHeadDim), 'column'),
    g('proj', S, n * m.vHeadDim, x.hidden, 'row'),
  ];
}

const gemmFlops = (s: GemmShape): number => 2 * s.M * s.N * s.K * s.batch;

/**
 * FLOPs of one MLA layer per micro-batch, forward and backward (3× the forward: dgrad and wgrad
 * each equal a forward GEMM):
 *   linear     Σ the GEMMs above on this rank (the duplicated down projections run on the T rows
 *              each rank holds; without SP every rank runs them on all S rows: t-fold redundant)
 *   attention  Q·Kᵀ 2·b·(n/t)·s²·d_q and P·V 2·b·(n/t)·s²·d_v over the full s × s (the model
 *              count; a causal kernel executes `causalFraction` of it)
 *   model      the layer's model FLOPs at TP = 1: every GEMM once over the s·b rows, plus attention
 */
export function mlaFlops(x: MlaShapes): { linear: number; attention: number; model: number } {
  const n = x.heads / x.tp;
  const s2 = x.batch * x.seq * x.seq;
  const attention = 3 * 2 * s2 * n * (mlaQkHeadWidth(x.mla) + x.mla.vHeadDim);
  const linear = 3 * mlaGemms(x).reduce((a, g) => a + gemmFlops(g.shape), 0);
  const one = mlaGemms({ ...x, tp: 1 });
  const model = 3 * one.reduce((a, g) => a + gemmFlops(g.shape), 0) + attention * x.tp;
  return { linear, attention, model };
}

/**
 * Activations one MLA layer keeps from forward to backward, bytes per micro-batch on one rank
 * (training dtype, b bytes; what each autograd node saves in MLASelfAttention.forward):
 *   downInput   the norm's output the down projections read, [T, h] (held rows)
 *   latents     the up projections' inputs, [T, q_lora] and [T, kv_lora] (under SP the held
 *               shard, re-gathered in backward); with --qk-layernorm the fused norm-linear keeps
 *               the norm's input and output: 2·T·(q_lora + kv_lora)
 *   kPosEmb     the shared rope key gathered over the sequence, [S, d_rope]
 *   qkv         query [S, n/t, d_q], key [S, n/t, d_q], value [S, n/t, d_v], saved by core
 *               attention: what --recompute-modules mla_up_proj discards (CheckpointWithoutOutput,
 *               multi_latent_attention.py:972-976, released at :454-457) and recomputes in backward
 *   coreOut     core attention's output, linear_proj's input [S, n/t·d_v]
 *   softmax     FlashAttention's fp32 log-sum-exp b·(n/t)·s (with `flash`), else the probabilities b·(n/t)·s²
 * The KV latent: [T, kv_lora + d_rope] per layer, what the down projection writes in place of
 * the K and V of dense attention, 2·S·(n/t)·d ([S, n/t, d] each) for multi-head attention.
 */
export function mlaActivations(
  x: MlaShapes,
  dtype: TrainDtype,
  flash: boolean,
): {
  downInput: number;
  latents: number;
  kPosEmb: number;
  qkv: number;
  coreOut: number;
  softmax: number;
  total: number;
  kvLatent: number;
} {
  const b = dtypeBytes[dtype];
  const { gathered: S, held: T } = mlaRows(x);
  const m = x.mla;
  const n = x.heads / x.tp;
  const dq = mlaQkHeadWidth(m);
  const downInput = T * x.hidden * b;
  const latents = (m.qkLayernorm ? 2 : 1) * T * ((m.qLoraRank ?? 0) + m.kvLoraRank) * b;
  const kPosEmb = S * m.qkPosEmbHeadDim * b;
  const qkv = S * n * (2 * dq + m.vHeadDim) * b;
  const coreOut = S * n * m.vHeadDim * b;
  const softmax = flash ? x.batch * n * x.seq * 4 : x.batch * n * x.seq * x.seq * b;
  return {
    downInput,
    latents,
    kPosEmb,
    qkv,
    coreOut,
    softmax,
    total: downInput + latents + kPosEmb + qkv + coreOut + softmax,
    kvLatent: T * (m.kvLoraRank + m.qkPosEmbHeadDim) * b,
  };
}

/** One TP collective of an MLA layer per pass: what it moves (elements of the full, gathered tensor). */
export interface MlaCollective {
  readonly what: 'q-latent' | 'kv-latent' | 'k-pos-emb' | 'proj-output';
  readonly kind: 'allGather' | 'reduceScatter' | 'allReduce';
  readonly elements: number;
}

/**
 * The TP collectives of one MLA layer (t > 1), forward and backward:
 * with SP, the up projections gather their latents (ColumnParallelLinear's sequence all-gather of
 * [S, q_lora] and [S, kv_lora]; :741-752 splits kv_combined on the held rows first), the rope key is
 * gathered (gather_from_sequence_parallel_region of [S, d_rope], :751-752), and linear_proj
 * reduce-scatters [S, h]; backward mirrors each (reduce-scatter for a gather, all-gather for the
 * reduce-scatter). Without SP: the up projections' input gradients are all-reduced in backward
 * ([S, q_lora], [S, kv_lora]) and linear_proj all-reduces [S, h] forward.
 * Once per step, not here: the duplicated down projections' weight gradients all-reduced over TP
 * under SP (transformer_engine.py:1057-1063 marks them sequence_parallel), h·(q_lora + kv_lora + d_rope).
 */
export function mlaCollectives(x: MlaShapes): { forward: MlaCollective[]; backward: MlaCollective[] } {
  if (x.tp === 1) return { forward: [], backward: [] };
  const { gathered: S } = mlaRows(x);
  const m = x.mla;
  const latents: [MlaCollective['what'], number][] = [
    ...(m.qLoraRank !== undefined ? [['q-latent', S * m.qLoraRank] as [MlaCollective['what'], number]] : []),
    ['kv-latent', S * m.kvLoraRank],
  ];
  const out = S * x.hidden;
  if (!x.sp)
    return {
      forward: [{ what: 'proj-output', kind: 'allReduce', elements: out }],
      backward: latents.map(([what, elements]) => ({ what, kind: 'allReduce', elements })),
    };
  // Without --q-lora-rank linear_q_proj gathers the [S, h] input instead of a latent.
  const gathers: [MlaCollective['what'], number][] = [
    ...(m.qLoraRank === undefined ? [['q-latent', S * x.hidden] as [MlaCollective['what'], number]] : []),
    ...latents,
    ['k-pos-emb', S * m.qkPosEmbHeadDim],
  ];
  return {
    forward: [
      ...gathers.map(([what, elements]) => ({ what, kind: 'allGather' as const, elements })),
      { what: 'proj-output', kind: 'reduceScatter', elements: out },
    ],
    backward: [
      { what: 'proj-output', kind: 'allGather', elements: out },
      ...gathers.map(([what, elements]) => ({ what, kind: 'reduceScatter' as const, elements })),
    ],
  };
}

/** One priced compute term of an MLA layer, µs on one rank. */
export interface MlaTerm {
  readonly term: MlaGemm | 'core-attention' | 'norms' | 'rope';
  readonly us: number;
}

/** An MLA layer's compute per micro-batch on one rank (its TP collectives are mlaCollectives'). */
export interface MlaCompute {
  readonly forward: readonly MlaTerm[];
  readonly backward: readonly MlaTerm[];
  /** What --recompute-modules mla_up_proj runs again before the backward: the up projections and RoPE. */
  readonly upProjRecompute: readonly MlaTerm[];
}

/**
 * The compute of one MLA layer priced by the projection's kernel models: each GEMM by gemmTime
 * (backward: dgrad [M, N]·[N, K] and wgrad [K, M]·[M, N]); core attention by the fused kernel's
 * model at the query/key head width d_q (forward F = causal share of Q·Kᵀ + P·V; backward 2.5·F,
 * as priced-ops.ts prices dense attention); memory-bound at the HBM rate:
 *   norms  with --qk-layernorm, the latents' RMSNorms: read and write T·(q_lora + kv_lora)
 *          forward; read x, dy and write dx backward (3 passes)
 *   rope   RoPE on the query's rope part [S, n/t, d_rope] and the shared key part [S, d_rope]
 *          (read and write), and the concatenations into query and key [S, n/t, d_q] (read the
 *          parts, write the whole: 2·S·(n/t)·d_q + S·d_rope); the same bytes backward.
 */
export function mlaCompute(
  x: MlaShapes,
  gpu: GpuSpec,
  dtype: TrainDtype,
  precision: GemmPrecision,
  kernel: AttentionKernel,
  clock: KernelClock = 'burst',
): MlaCompute {
  const b = dtypeBytes[dtype];
  const { gathered: S, held: T } = mlaRows(x);
  const m = x.mla;
  const n = x.heads / x.tp;
  const dq = mlaQkHeadWidth(m);
  const us = (s: GemmShape): number => gemmTime(s, gpu, precision, undefined, clock).us;
  const back = (s: GemmShape): number =>
    us({ M: s.M, N: s.K, K: s.N, batch: s.batch }) + us({ M: s.K, N: s.N, K: s.M, batch: s.batch });
  const gemms = mlaGemms(x);
  const attnF = causalFraction * 2 * x.batch * n * x.seq * x.seq * (dq + m.vHeadDim);
  const flash = (pass: 'forward' | 'backward', flops: number): number =>
    flashAttentionUs(flops, dq, pass, gpu, dtype, undefined, { seq: x.seq, kernel }, clock);
  const normElems = m.qkLayernorm ? T * ((m.qLoraRank ?? 0) + m.kvLoraRank) : 0;
  const ropeBytes =
    (2 * S * n * m.qkPosEmbHeadDim + 2 * S * m.qkPosEmbHeadDim + 2 * S * n * dq + S * m.qkPosEmbHeadDim) * b;
  const mem = (bytes: number): number => memoryBoundUs(bytes, gpu);
  const byName = (name: MlaGemm): MlaGemmShape | undefined => gemms.find((g) => g.gemm === name);
  const down = gemms.filter((g) => g.gemm === 'q-down' || g.gemm === 'kv-down' || g.gemm === 'q-proj');
  const up = gemms.filter((g) => g.gemm === 'q-up' || g.gemm === 'kv-up');
  const proj = byName('proj')!;
  const forward: MlaTerm[] = [
    ...down.map((g) => ({ term: g.gemm, us: us(g.shape) })),
    { term: 'norms', us: mem(2 * normElems * b) },
    ...up.map((g) => ({ term: g.gemm, us: us(g.shape) })),
    { term: 'rope', us: mem(ropeBytes) },
    { term: 'core-attention', us: flash('forward', attnF) },
    { term: 'proj', us: us(proj.shape) },
  ];
  const backward: MlaTerm[] = [
    { term: 'proj', us: back(proj.shape) },
    { term: 'core-attention', us: flash('backward', 2.5 * attnF) },
    { term: 'rope', us: mem(ropeBytes) },
    ...up.map((g) => ({ term: g.gemm, us: back(g.shape) })),
    { term: 'norms', us: mem(3 * normElems * b) },
    ...down.map((g) => ({ term: g.gemm, us: back(g.shape) })),
  ];
  const upProjRecompute: MlaTerm[] = [
    ...up.map((g) => ({ term: g.gemm, us: us(g.shape) })),
    { term: 'rope', us: mem(ropeBytes) },
  ];
  return { forward, backward, upProjRecompute };
}
