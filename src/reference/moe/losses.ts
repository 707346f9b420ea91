import { softmaxRef } from '../softmax.ts';
import { sigmoid } from '../swiglu.ts';
import type { MoeConfig } from './config.ts';
import { auxLossArgs, auxLossRowsOf, zLossArgs, zLossRows } from './router-loss.ts';
import { normalizedRows } from './scores.ts';
import { topkIndices } from './topk.ts';

// The router's two auxiliary losses on one device (Megatron-Core core_v0.19.0), logits [T, E]:
//
// Load balancing (moe_utils.py switch_load_balancing_loss_func, fed by router.py _apply_aux_loss
// and moe_utils.py compute_routing_scores_for_aux_loss):
//   S = softmax(l) over E (softmax), or σ(l) / (Σ_e σ(l) + 1e-20) (sigmoid), for every token;
//   c_e = tokens whose top-k of S (before any capacity dropping) holds e;
//   aux = coeff · E / (k · T²) · Σ_e c_e · Σ_t S[t, e]      (= coeff · E · Σ_e f_e·P_e with
//   f_e = c_e / (T·k), P_e = Σ_t S[t, e] / T; total_num_tokens = T on one device)
//   c_e is a count (no gradient): ∂aux/∂S[t, e] = coeff · E · c_e / (k · T²).
//
// Z-loss (moe_utils.py z_loss_func, router.py apply_z_loss; ST-MoE, arXiv:2202.08906):
//   z = coeff_z · (1/T) Σ_t (logsumexp_e l[t, e])²,   ∂z/∂l[t, e] = coeff_z · 2 · lse_t · softmax(l_t)_e / T.
//
// Row by row (each token's terms, the kernels' twins) in router-loss.ts; the losses here sum them.
//
// Both reach the router through MoEAuxLossAutoScaler with backward scale 1 (its default,
// main_loss_backward_scale), so the block's objective is ⟨dy, y⟩ + aux + z.

/** A loss value and its gradient with respect to the logits [T, E]. */
export interface RouterLoss {
  readonly loss: number;
  readonly dLogits: Float64Array;
}

/**
 * The aux loss's scores S [T, E]: softmax over E, or σ(l) / (Σ_e σ(l) + 1e-20) (sigmoid); with
 * the sigmoid router also σ(l) [T, E] itself (its backward needs it), else null.
 */
function auxScores(
  c: MoeConfig,
  logits: ArrayLike<number>,
  T: number,
): { readonly S: Float64Array; readonly sig: Float64Array | null } {
  const E = c.numMoeExperts;
  if (c.moeRouterScoreFunction !== 'sigmoid') return { S: softmaxRef(logits, [T, E]), sig: null };
  const sig = Float64Array.from(logits, sigmoid);
  return { S: normalizedRows(sig, E), sig };
}

/** c_e: tokens whose top-k of scores S [T, E] holds e ([E]). */
function topkCounts(c: MoeConfig, S: Float64Array, T: number): Float64Array {
  const E = c.numMoeExperts;
  const counts = new Float64Array(E);
  for (let t = 0; t < T; t++) for (const e of topkIndices(S, E, c.moeRouterTopk, t * E)) counts[e]++;
  return counts;
}

/** c_e of the aux loss: tokens whose top-k of S (before capacity) holds e ([E]). */
export function auxLossCounts(c: MoeConfig, logits: ArrayLike<number>, T: number): Float64Array {
  return topkCounts(c, auxScores(c, logits, T).S, T);
}

/**
 * The switch load-balancing loss and its logits gradient; zero when moe_aux_loss_coeff is 0
 * (Megatron does not compute it). With `group` (tokens split over ranks: the group's counts c_e
 * summed and its token count), the loss is this rank's share of the group's loss — its tokens'
 * terms of coeff · E / (k · T_g²) · Σ_e c_e · Σ_t S[t, e] — so the shares sum to the loss of the
 * concatenated tokens, and the gradient is that loss's on these logits.
 */
export function auxLoss(
  c: MoeConfig,
  logits: ArrayLike<number>,
  T: number,
  group?: { readonly counts: ArrayLike<number>; readonly tokens: number },
): RouterLoss {
  const args = T === 0 ? null : auxLossArgs(c, group?.tokens ?? T);
  if (args === null) return { loss: 0, dLogits: new Float64Array(T * c.numMoeExperts) };
  const { S, sig } = auxScores(c, logits, T);
  const counts = group?.counts ?? topkCounts(c, S, T);
  const { rows, dLogits } = auxLossRowsOf(sig ?? S, c.numMoeExperts, counts, args.b, args.score);
  return { loss: sum(rows), dLogits };
}

/** Σ v in float64. */
function sum(v: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i];
  return s;
}

/**
 * The router z-loss and its logits gradient; zero when moe_z_loss_coeff is null. With `tokens`
 * (the group's count when tokens are split over ranks), the mean is over those: this rank's share.
 */
export function zLoss(c: MoeConfig, logits: ArrayLike<number>, T: number, tokens = T): RouterLoss {
  const args = T === 0 ? null : zLossArgs(c, tokens);
  if (args === null) return { loss: 0, dLogits: new Float64Array(T * c.numMoeExperts) };
  const { rows, dLogits } = zLossRows(logits, c.numMoeExperts, args.a);
  return { loss: sum(rows), dLogits };
}
