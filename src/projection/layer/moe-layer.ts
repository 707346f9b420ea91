import { gemmTime, memoryBoundUs, type GemmShape } from '../../hardware/kernel-time.ts';
import type { KernelClock } from '../../hardware/sustained-clock.ts';
import type { GemmPrecision, GpuSpec } from '../../hardware/gpus.ts';
import type { TrainDtype } from '../../hardware/dtype.ts';
import type { TokenDispatcher } from '../../megatron/moe.ts';
import { castBytesPerElement, type LinearRecipe } from '../../megatron/low-precision.ts';

/** One MoE layer's shapes on one rank, per micro-batch (see moeRows). */
export interface MoeShapes {
  /** T: tokens on the rank (s·b/(t·cp) with SP, s·b/cp at t = 1). */
  readonly tokens: number;
  readonly hidden: number;
  readonly experts: number;
  readonly topk: number;
  /** F_e: one expert's FFN. */
  readonly ffn: number;
  /** F_s: the shared experts' FFN (0: none). */
  readonly sharedFfn: number;
  /** t: the attention's TP (the shared experts are split over it, shared_experts.py). */
  readonly tp: number;
  readonly etp: number;
  readonly ep: number;
  /** SwiGLU (fc1 = gate and up, 2·F) or GeLU (fc1 = F). */
  readonly gated: boolean;
  readonly groupedGemm: boolean;
  readonly dispatcher: TokenDispatcher;
  /** Capacity factor (absent: dropless). */
  readonly capacityFactor?: number;
  /** --moe-pad-expert-input-to-capacity: every expert gets exactly its capacity from each rank (drop-and-pad). */
  readonly padToCapacity?: boolean;
  /** Busiest rank's routed tokens over the mean, ≥ 1. */
  readonly imbalance: number;
}

/** The rows one MoE layer moves and computes on the busiest rank. */
export interface MoeRows {
  /**
   * Rows this rank permutes and sends: T·k, or E·C with capacity C = ⌈T·k/E · cf⌉ (moe_utils.py:256)
   * when that is fewer; padded to capacity, E·C always.
   */
  readonly sent: number;
  /** The busiest rank's load over the mean, after capacity: min(imbalance, cf) with a capacity factor; 1 padded. */
  readonly load: number;
  /** Rows its local experts compute after the ETP all-gather: sent · load · ETP. */
  readonly computed: number;
  /** Rows per local expert: computed / (E/EP). */
  readonly perExpert: number;
  /** Share of the busiest expert's routed tokens dropped: 1 − cf/imbalance when imbalance > cf. */
  readonly droppedShare: number;
}

/**
 * The rows of a MoE layer. Uniform routing sends each expert T·k/E rows from every rank; a
 * capacity factor cf caps each expert at C = ⌈(T·k/E)·cf⌉ per source rank
 * (MoEAlltoAllTokenDispatcher.preprocess, get_capacity), so with load imbalance f the busiest
 * expert keeps min(f, cf)·T·k/E and drops the rest.
 *
 * Padded to capacity (--moe-pad-expert-input-to-capacity, drop-and-pad), every expert takes exactly
 * C rows from every rank whatever the routing: the router's map becomes the capacity mask itself
 * (apply_router_token_dropping, moe_utils.py:1013-1014), the alltoall dispatcher sends C·E rows and
 * each local expert computes C·ETP·EP (token_dispatcher.py:511-534; the allgather dispatcher sums
 * the padded map, :309-317). So sent = E·C, load 1, and the padding rows cost as routed ones;
 * imbalance beyond cf still drops 1 − cf/f of the busiest expert's tokens.
 */
export function moeRows(x: MoeShapes): MoeRows {
  const routed = x.tokens * x.topk;
  const cap = x.capacityFactor;
  const capacityRows = cap === undefined ? routed : x.experts * Math.ceil((routed / x.experts) * cap);
  const padded = x.padToCapacity === true && cap !== undefined;
  const sent = padded ? capacityRows : Math.min(routed, capacityRows);
  const load = padded ? 1 : cap === undefined ? x.imbalance : Math.min(x.imbalance, cap);
  const computed = sent * load * x.etp;
  const local = x.experts / x.ep;
  return {
    sent,
    load,
    computed,
    perExpert: computed / local,
    droppedShare: cap !== undefined && x.imbalance > cap ? 1 - cap / x.imbalance : 0,
  };
}

/** One priced compute term of a MoE layer, µs on the busiest rank. */
export interface MoeTerm {
  readonly term:
    | 'router'
    | 'routing'
    | 'permute'
    | 'sort-chunks'
    | 'expert-cast'
    | 'expert-fc1'
    | 'expert-act'
    | 'expert-fc2'
    | 'unpermute'
    | 'shared-cast'
    | 'shared-fc1'
    | 'shared-act'
    | 'shared-fc2';
  readonly us: number;
  /** The grouped GEMM's rate over the dense peak (GEMM terms only). */
  readonly efficiency?: number;
}

/** A MoE layer's compute per micro-batch on the busiest rank, forward and backward (its exchanges are expert-parallel.ts's). */
export interface MoeCompute {
  readonly rows: MoeRows;
  readonly forward: readonly MoeTerm[];
  readonly backward: readonly MoeTerm[];
}

/** [M, K]·[K, N] and its two backward GEMMs: dgrad [M, N]·[N, K], wgrad [K, M]·[M, N]. */
const backwardShapes = (g: GemmShape): [GemmShape, GemmShape] => [
  { M: g.M, N: g.K, K: g.N, batch: g.batch },
  { M: g.K, N: g.N, K: g.M, batch: g.batch },
];

/**
 * The compute of one MoE layer (Megatron-Core's MoELayer, core_v0.19.0) per micro-batch on the
 * rank with the most routed rows, each term priced by the projection's kernel model
 * (kernel-time.ts):
 * - router: [T, h]·[h, E] (router.py gating); its softmax, top-k and auxiliary loss: three
 *   passes over the [T, E] fp32 scores, memory-bound.
 * - permute / unpermute (moe_utils.py permute, unpermute): gather T rows into `sent` rows and
 *   scatter back, (T_in + sent)·h elements each way at the HBM rate; the allgather dispatcher
 *   permutes from the gathered T·ETP·EP rows. sort_chunks_by_index (alltoall with E/EP > 1):
 *   2·computed·h.
 * - the experts (experts.py): fc1 [r, h]·[h, g·F/ETP] and fc2 [r, F/ETP]·[F/ETP, h] per local
 *   expert, r rows each: one grouped GEMM over the E/EP experts (`batch` = E/EP, TEGroupedMLP,
 *   --moe-grouped-gemm), else E/EP GEMMs one after another (SequentialMLP). The GEMM model's
 *   tile and wave quantization lowers the rate as r falls. The activation reads g·F/ETP and
 *   writes F/ETP per row.
 * - shared experts (shared_experts.py): a dense MLP of F_s split over t on the TP group's T·t rows.
 * Backward: each GEMM's dgrad and wgrad; memory-bound terms move their bytes again (the
 * activation's backward reads g + 1 and writes g per element).
 * Every GEMM (router, experts, shared experts) at `clock`: in a step the sustained one, as the
 * dense and MLA layers' (sustained-clock.ts); `burst` for an isolated benchmark.
 * Under a low-precision recipe (`lowPrecision`: the experts' TEGroupedLinear and the shared experts' TE linears
 * quantize their inputs, transformer_engine.py TEGroupedLinear :2424-2431): before each fprop and
 * dgrad its activation operand is cast, castBytesPerElement(recipe, bytes) per element (as the
 * dense layer's fp8-cast rule, priced-ops.ts) — forward fc1's input [r·E/EP, h] and fc2's
 * [r·E/EP, F/ETP], backward fc2's output gradient [r·E/EP, h] and fc1's [r·E/EP, g·F/ETP]; the
 * shared experts' likewise on their T·t rows with F_s/t. The weights' casts are once per step
 * (projection/step/quantized-params.ts). The router stays in the training dtype `lowPrecision.dtype`
 * (router.py:87-109: router_gating_linear, a matmul in the input's dtype or moe_router_dtype, not a
 * Transformer Engine linear).
 */
export function moeCompute(
  x: MoeShapes,
  gpu: GpuSpec,
  precision: GemmPrecision,
  bytes: number,
  clock: KernelClock = 'burst',
  lowPrecision?: { readonly recipe: LinearRecipe; readonly dtype: TrainDtype },
): MoeCompute {
  const recipe = lowPrecision?.recipe;
  const rows = moeRows(x);
  const g = x.gated ? 2 : 1;
  const local = x.experts / x.ep;
  const f = x.ffn / x.etp;
  const gemm = (s: GemmShape): { us: number; efficiency: number } => {
    const one = gemmTime(s, gpu, precision, undefined, clock);
    return { us: one.us, efficiency: one.efficiency };
  };
  const routerGemm = (s: GemmShape): { us: number; efficiency: number } => {
    const one = gemmTime(s, gpu, lowPrecision?.dtype ?? precision, undefined, clock);
    return { us: one.us, efficiency: one.efficiency };
  };
  // SequentialMLP runs E/EP GEMMs of batch 1; TEGroupedMLP one grouped GEMM of batch E/EP.
  const experts = (s: GemmShape): { us: number; efficiency: number } => {
    if (x.groupedGemm) return gemm({ ...s, batch: local });
    const one = gemm({ ...s, batch: 1 });
    return { us: one.us * local, efficiency: one.efficiency };
  };
  const r = Math.max(1, Math.ceil(rows.perExpert));
  const fc1: GemmShape = { M: r, N: g * f, K: x.hidden, batch: 1 };
  const fc2: GemmShape = { M: r, N: x.hidden, K: f, batch: 1 };
  const router: GemmShape = { M: x.tokens, N: x.experts, K: x.hidden, batch: 1 };
  const mem = (elements: number): number => memoryBoundUs(elements * bytes, gpu);
  // The allgather dispatcher permutes the gathered T·ETP·EP tokens into its local experts' rows.
  const permuteUs = mem(
    x.dispatcher === 'allgather'
      ? (x.tokens * x.etp * x.ep + rows.computed) * x.hidden
      : (x.tokens + rows.sent) * x.hidden,
  );
  const sortUs = x.dispatcher === 'alltoall' && local > 1 ? mem(2 * rows.computed * x.hidden) : 0;
  const routingUs = memoryBoundUs(3 * x.tokens * x.experts * 4, gpu);
  const shared = x.sharedFfn > 0;
  const sRows = x.tokens * x.tp;
  const sf = x.sharedFfn / x.tp;
  const sfc1: GemmShape = { M: sRows, N: g * sf, K: x.hidden, batch: 1 };
  const sfc2: GemmShape = { M: sRows, N: x.hidden, K: sf, batch: 1 };

  const e1 = experts(fc1);
  const e2 = experts(fc2);
  // The quantization of a GEMM's activation operand of `elements` (none in the training dtype).
  const cast = (term: 'expert-cast' | 'shared-cast', elements: number): MoeTerm[] =>
    recipe ? [{ term, us: memoryBoundUs(elements * castBytesPerElement(recipe, bytes), gpu) }] : [];
  const forward: MoeTerm[] = [
    { term: 'router', ...routerGemm(router) },
    { term: 'routing', us: routingUs },
    { term: 'permute', us: permuteUs },
    { term: 'sort-chunks', us: sortUs },
    ...cast('expert-cast', rows.computed * x.hidden),
    { term: 'expert-fc1', ...e1 },
    { term: 'expert-act', us: mem(rows.computed * (g + 1) * f) },
    ...cast('expert-cast', rows.computed * f),
    { term: 'expert-fc2', ...e2 },
    { term: 'sort-chunks', us: sortUs },
    { term: 'unpermute', us: permuteUs },
  ];
  if (shared)
    forward.push(
      ...cast('shared-cast', sRows * x.hidden),
      { term: 'shared-fc1', ...gemm(sfc1) },
      { term: 'shared-act', us: mem(sRows * (g + 1) * sf) },
      ...cast('shared-cast', sRows * sf),
      { term: 'shared-fc2', ...gemm(sfc2) },
    );
  const back = (term: MoeTerm['term'], s: GemmShape, each: (s: GemmShape) => { us: number; efficiency: number }) => {
    const [d, w] = backwardShapes(s).map(each) as [
      { us: number; efficiency: number },
      { us: number; efficiency: number },
    ];
    return { term, us: d.us + w.us, efficiency: (d.efficiency * d.us + w.efficiency * w.us) / (d.us + w.us) };
  };
  const backward: MoeTerm[] = [
    { term: 'unpermute', us: permuteUs },
    { term: 'sort-chunks', us: sortUs },
    ...cast('expert-cast', rows.computed * x.hidden),
    back('expert-fc2', fc2, experts),
    { term: 'expert-act', us: mem(rows.computed * (2 * g + 1) * f) },
    ...cast('expert-cast', rows.computed * g * f),
    back('expert-fc1', fc1, experts),
    { term: 'sort-chunks', us: sortUs },
    { term: 'permute', us: permuteUs },
    { term: 'routing', us: routingUs },
    back('router', router, routerGemm),
  ];
  if (shared)
    backward.push(
      ...cast('shared-cast', sRows * x.hidden),
      back('shared-fc2', sfc2, gemm),
      { term: 'shared-act', us: mem(sRows * (2 * g + 1) * sf) },
      ...cast('shared-cast', sRows * g * sf),
      back('shared-fc1', sfc1, gemm),
    );
  return { rows, forward, backward };
}

/** Σ µs of the terms `keep` selects. */
export const termsUs = (terms: readonly MoeTerm[], keep: (t: MoeTerm) => boolean = () => true): number =>
  terms.reduce((a, t) => a + (keep(t) ? t.us : 0), 0);

/** True for the shared experts' terms (what --moe-shared-expert-overlap runs on its side stream). */
export const isSharedTerm = (t: MoeTerm): boolean => t.term.startsWith('shared-');

/**
 * Model FLOPs of one MoE layer's MLP part per micro-batch at TP = 1 (forward and backward, 3×
 * the forward), S = s·b tokens: router 2·S·h·E, the k active experts 2·S·k·(g + 1)·h·F_e, the
 * shared experts 2·S·(g + 1)·h·F_s (g + 1 matrices of h × F: 3 with SwiGLU, 2 with GeLU). MFU
 * counts these: the active parameters, each token through k experts.
 */
export function moeModelFlops(
  x: Pick<MoeShapes, 'hidden' | 'experts' | 'topk' | 'ffn' | 'sharedFfn' | 'gated'>,
  tokens: number,
): number {
  const m = x.gated ? 3 : 2;
  return 3 * 2 * tokens * x.hidden * (x.experts + x.topk * m * x.ffn + m * x.sharedFfn);
}

/** Model FLOPs of a dense MLP of FFN `ffn` on S tokens, forward and backward: 3 · 2·S·(g + 1)·h·F. */
export const denseMlpFlops = (hidden: number, ffn: number, gated: boolean, tokens: number): number =>
  3 * 2 * tokens * (gated ? 3 : 2) * hidden * ffn;
