import type { Interconnect } from '../../hardware/interconnect.ts';
import type { SystemSpec } from '../../hardware/systems.ts';
import type { LayerPlan, PlannedOp } from '../../parallel/plan-types.ts';
import type { StepDurations } from '../../schedule/schedule.ts';
import { p2pUs } from './group-links.ts';

/**
 * Core attention: the per-head GEMMs and softmax (QKᵀ, softmax, P·V and their backward), not the
 * RoPE rotations that share the `heads` split.
 */
export const isCoreAttention = (op: PlannedOp): boolean =>
  op.split === 'heads' && !(op.kind === 'kernel' && (op.kernel === 'rope' || op.kernel === 'ropeBackward'));

/** One layer's core-attention compute time on rank 0 of `plan`, ms, forward and backward. */
export function coreAttentionMs(plan: LayerPlan, d: StepDurations): { forwardMs: number; backwardMs: number } {
  let forwardMs = 0;
  let backwardMs = 0;
  for (const op of plan.ops) {
    if (!isCoreAttention(op)) continue;
    const ms = d.computeMs[0]?.[op.index] ?? 0;
    if (op.phase === 'forward') forwardMs += ms;
    else if (op.phase === 'backward') backwardMs += ms;
  }
  return { forwardMs, backwardMs };
}

/** What context parallelism adds to one layer on one rank, ms. */
export interface RingAttention {
  /** Added to the layer's forward / backward (extra blocks and the exchange they do not hide). */
  readonly forwardMs: number;
  readonly backwardMs: number;
  /** Σ p2p time of the exchange. */
  readonly commMs: number;
  /** The part of the exchange that compute does not hide, both passes and the forward's alone. */
  readonly exposedMs: number;
  readonly exposedForwardMs: number;
}

/**
 * Megatron-Core's ring ("p2p") context parallelism (transformer_engine's context-parallel
 * attention, cp_comm_type p2p): each rank holds s/cp tokens; attention runs cp steps, step k on
 * the K, V block received k hops away while the next block is sent on: forward cp − 1 sends of
 * K and V ([s/cp, b, nkv·d] each), backward cp − 1 sends of K, V and of dK, dV. A send overlaps
 * one block's compute, so each step costs max(block compute, send); the plan at s/cp prices one
 * block (the s/cp × s/cp scores: the full s × s work over cp ranks, as the plan counts attention
 * without a causal skip).
 */
export function ringAttention(
  cp: number,
  core: { forwardMs: number; backwardMs: number },
  kvBytes: number,
  link: Interconnect,
  system: SystemSpec,
): RingAttention {
  if (cp <= 1) return { forwardMs: 0, backwardMs: 0, commMs: 0, exposedMs: 0, exposedForwardMs: 0 };
  const sendF = p2pUs(system, link, kvBytes) / 1e3;
  const sendB = p2pUs(system, link, 2 * kvBytes) / 1e3;
  const exposedF = Math.max(0, sendF - core.forwardMs);
  const exposedB = Math.max(0, sendB - core.backwardMs);
  const steps = cp - 1;
  return {
    forwardMs: steps * (core.forwardMs + exposedF),
    backwardMs: steps * (core.backwardMs + exposedB),
    commMs: steps * (sendF + sendB),
    exposedMs: steps * (exposedF + exposedB),
    exposedForwardMs: steps * exposedF,
  };
}
