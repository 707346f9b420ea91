import { softmaxBackwardRef, softmaxRef } from '../softmax.ts';
import { sigmoid } from '../swiglu.ts';
import { expertCapacity, type MoeConfig } from './config.ts';
import { topkIndices } from './topk.ts';

// The router of an MoE block in float64 (Megatron-Core core_v0.19.0,
// megatron/core/transformer/moe/router.py TopKRouter.routing and moe_utils.py), for T tokens and
// E experts, logits [T, E]:
//   scores and probs (topk_routing_with_score_function), per token t with picks I_t (|I_t| = k):
//     softmax, pre-softmax:  s = softmax(l_t) over E;  I_t = topk(s);  p_j = s_{I_j}
//     softmax, after top-k:  I_t = topk(l_t);          p = softmax(l_{I_t}) over the k
//     sigmoid:               s = σ(l_t);  I_t = topk(s);  p_j = s_{I_j} / (Σ_{i∈I_t} s_i + 1e-20) (k > 1), s_{I_j} (k = 1)
//   capacity (apply_router_token_dropping): C = ceil(T·k/E · factor); if C ≤ T, expert e keeps the
//     C tokens ranked highest by p_{t,e} (policy 'probs', unrouted tokens count 0) or by being
//     routed (policy 'position': its first C routed tokens); a dropped pick's prob becomes 0.
// Ties everywhere go to the lower index (topk.ts).

/** The router's decisions for T tokens: each token's k picks in rank order, their probs, and which survive capacity. */
export interface MoeRouting {
  readonly tokens: number;
  readonly experts: number;
  readonly topk: number;
  /** Expert of pick j of token t at t·k + j, highest score first ([T, k]). */
  readonly topIdx: Int32Array;
  /** The probability (combine weight) of each pick before dropping ([T, k]). */
  readonly topProb: Float64Array;
  /** 1 where the pick survives capacity, 0 where it is dropped ([T, k]; all 1 when dropless). */
  readonly kept: Uint8Array;
  /** Tokens per expert after dropping, null when dropless. */
  readonly capacity: number | null;
  /** Tokens each expert receives after dropping ([E]). */
  readonly tokensPerExpert: Int32Array;
  /** Picks dropped by capacity. */
  readonly dropped: number;
}

function checkLogits(logits: ArrayLike<number>, T: number, E: number): void {
  if (logits.length !== T * E)
    throw new Error(`MoE router: logits hold ${logits.length} values; [T, E] = [${T}, ${E}] needs ${T * E}.`);
  for (let i = 0; i < logits.length; i++)
    if (!Number.isFinite(logits[i]))
      throw new Error(
        `MoE router: logit ${i} (token ${Math.floor(i / E)}, expert ${i % E}) is ${logits[i]}; top-k needs finite logits.`,
      );
}

/** Per-token scores that rank the experts: softmax over E (pre-softmax), σ (sigmoid), else the logits. */
function rankingScores(c: MoeConfig, logits: ArrayLike<number>, T: number): ArrayLike<number> {
  const E = c.numMoeExperts;
  if (c.moeRouterScoreFunction === 'sigmoid') return Float64Array.from(logits, sigmoid);
  return c.moeRouterPreSoftmax ? softmaxRef(logits, [T, E]) : logits;
}

/** The routing of T tokens from router logits [T, E]: picks, probs, capacity (see the header). */
export function routeTokens(c: MoeConfig, logits: ArrayLike<number>, T: number): MoeRouting {
  const E = c.numMoeExperts;
  const k = c.moeRouterTopk;
  checkLogits(logits, T, E);
  const ranked = rankingScores(c, logits, T);
  const topIdx = new Int32Array(T * k);
  const topProb = new Float64Array(T * k);
  for (let t = 0; t < T; t++) {
    const picks = topkIndices(ranked, E, k, t * E);
    const v = picks.map((e) => ranked[t * E + e]);
    let p = v;
    if (c.moeRouterScoreFunction === 'softmax' && !c.moeRouterPreSoftmax) p = Array.from(softmaxRef(v, [k]));
    if (c.moeRouterScoreFunction === 'sigmoid' && k > 1) {
      const d = v.reduce((a, b) => a + b, 0) + 1e-20;
      p = v.map((x) => x / d);
    }
    picks.forEach((e, j) => {
      topIdx[t * k + j] = e;
      topProb[t * k + j] = p[j];
    });
  }
  const capacity = expertCapacity(c, T);
  const kept = keptByCapacity(c, topIdx, topProb, T, capacity);
  const tokensPerExpert = new Int32Array(E);
  let dropped = 0;
  topIdx.forEach((e, i) => {
    if (kept[i] === 1) tokensPerExpert[e]++;
    else dropped++;
  });
  return { tokens: T, experts: E, topk: k, topIdx, topProb, kept, capacity, tokensPerExpert, dropped };
}

/** Which picks survive capacity C (all when C is null or C > T): per expert, the C tokens ranked highest by the drop policy. */
function keptByCapacity(
  c: MoeConfig,
  topIdx: Int32Array,
  topProb: Float64Array,
  T: number,
  capacity: number | null,
): Uint8Array {
  const k = c.moeRouterTopk;
  if (capacity === null || capacity > T) return new Uint8Array(T * k).fill(1);
  const kept = new Uint8Array(T * k);
  for (let e = 0; e < c.numMoeExperts; e++) {
    // column e of routing_probs (policy probs) or of routing_map (policy position), unrouted tokens 0
    const col = new Float64Array(T);
    const slot = new Int32Array(T).fill(-1);
    for (let i = 0; i < T * k; i++)
      if (topIdx[i] === e) {
        const t = Math.floor(i / k);
        col[t] = c.moeTokenDropPolicy === 'probs' ? topProb[i] : 1;
        slot[t] = i;
      }
    for (const t of topkIndices(col, T, capacity)) if (slot[t] >= 0) kept[slot[t]] = 1;
  }
  return kept;
}

/**
 * dL/dlogits [T, E] from dL/dp of every pick ([T, k], the combine's gradient): the score
 * function's chain rule; dropped picks (p multiplied by 0) pass nothing back.
 */
export function routerBackward(
  c: MoeConfig,
  logits: ArrayLike<number>,
  r: MoeRouting,
  dTopProb: ArrayLike<number>,
): Float64Array {
  const { tokens: T, experts: E, topk: k } = r;
  const dl = new Float64Array(T * E);
  const ranked = rankingScores(c, logits, T);
  for (let t = 0; t < T; t++) {
    const idx = Array.from(r.topIdx.subarray(t * k, (t + 1) * k));
    const dp = idx.map((_, j) => dTopProb[t * k + j] * r.kept[t * k + j]);
    if (c.moeRouterScoreFunction === 'softmax' && c.moeRouterPreSoftmax) {
      const s = Array.from({ length: E }, (_, e) => ranked[t * E + e]);
      const ds = new Float64Array(E);
      idx.forEach((e, j) => (ds[e] += dp[j]));
      softmaxBackwardRef(s, ds, E).forEach((v, e) => (dl[t * E + e] += v));
    } else if (c.moeRouterScoreFunction === 'softmax') {
      const p = idx.map((_, j) => r.topProb[t * k + j]);
      softmaxBackwardRef(p, dp, k).forEach((v, j) => (dl[t * E + idx[j]] += v));
    } else {
      const s = idx.map((e) => ranked[t * E + e]);
      // p_j = s_j / D (k > 1), D = Σ s + 1e-20: ds_j = dp_j / D − Σ_i dp_i s_i / D²; then dσ/dl = σ(1 − σ)
      const D = k > 1 ? s.reduce((a, b) => a + b, 0) + 1e-20 : 1;
      const dot = k > 1 ? dp.reduce((a, v, j) => a + v * s[j], 0) / (D * D) : 0;
      idx.forEach((e, j) => (dl[t * E + e] += (dp[j] / D - dot) * s[j] * (1 - s[j])));
    }
  }
  return dl;
}

/**
 * How far the routing of `logits` is from changing: the smallest gap, over tokens, between the
 * ranking score of a token's k-th pick and its best unpicked expert (k < E), and, under capacity
 * with policy 'probs', over experts, between the least probable kept pick and the most probable
 * dropped one. Infinity when nothing can flip. A run whose logits differ from these by float32
 * rounding (a GPU rank's router GEMM) routes the same when its error stays below the margin.
 */
export function routingMargin(c: MoeConfig, logits: ArrayLike<number>, r: MoeRouting): number {
  const { tokens: T, experts: E, topk: k } = r;
  const ranked = rankingScores(c, logits, T);
  let margin = Infinity;
  for (let t = 0; t < (k < E ? T : 0); t++) {
    const picked = new Set(r.topIdx.subarray(t * k, (t + 1) * k));
    let best = -Infinity;
    for (let e = 0; e < E; e++) if (!picked.has(e)) best = Math.max(best, ranked[t * E + e]);
    margin = Math.min(margin, ranked[t * E + r.topIdx[t * k + k - 1]] - best);
  }
  if (r.capacity !== null && c.moeTokenDropPolicy === 'probs')
    for (let e = 0; e < E; e++) {
      let keptMin = Infinity;
      let droppedMax = -Infinity;
      r.topIdx.forEach((x, i) => {
        if (x !== e) return;
        if (r.kept[i] === 1) keptMin = Math.min(keptMin, r.topProb[i]);
        else droppedMax = Math.max(droppedMax, r.topProb[i]);
      });
      if (keptMin < Infinity && droppedMax > -Infinity) margin = Math.min(margin, keptMin - droppedMax);
    }
  return margin;
}
