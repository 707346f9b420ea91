import { collectiveTimeUs, type Interconnect } from '../../hardware/interconnect.ts';
import type { SystemSpec } from '../../hardware/systems.ts';
import type { CpExchange } from '../../megatron/cp-comm-type.ts';
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

/** The links a CP exchange uses: the CP group's, and for a2a+p2p its inner (all-to-all) and outer (ring) groups'. */
export interface CpLinks {
  readonly cp: Interconnect;
  readonly inner?: Interconnect;
  readonly outer?: Interconnect;
}

/**
 * What context parallelism adds to one layer on one rank, by Megatron's --cp-comm-type
 * (cp-comm-type.ts, TE's context_parallel.py). `core` is one block: the s/cp plan's core
 * attention (causal: what one step of the load-balanced ring computes); every type computes cp
 * blocks in all (the whole causal s × s over the cp ranks), so each adds (cp − 1) blocks besides
 * its exchange. `bytes.q` is the rank's Q (or O, dO, dQ) [s/cp, b, n/t·d], `bytes.kv` its K and V.
 * A collective call costs NCCL's base latency + the ring model (interconnect.ts).
 *
 * - p2p: ringAttention.
 * - a2a: all-to-alls over cp of Q, K, V and of O (forward), of dO and of dQ, dK, dV (backward),
 *   none under compute: exposed whole.
 * - allgather: an all-gather of K, V (cp·kv bytes gathered) forward; again backward, and a
 *   reduce-scatter of dK, dV; exposed whole.
 * - a2a+p2p, sizes [a, r]: the a2a over the inner group of a (heads ÷ a, sequence × a), then the
 *   ring over the outer group of r, whose block is a·core (a² the scores on 1/a of the heads) and
 *   whose sends carry the same kv bytes: (a − 1)·core + ringAttention(r, a·core) + the a2a.
 */
export function cpAttention(
  x: CpExchange,
  cp: number,
  core: { forwardMs: number; backwardMs: number },
  bytes: { readonly q: number; readonly kv: number },
  links: CpLinks,
  system: SystemSpec,
): RingAttention {
  if (cp <= 1 || x.type === 'p2p') return ringAttention(cp, core, bytes.kv, links.cp, system);
  const callMs = (op: 'allToAll' | 'allGather' | 'reduceScatter', payload: number, size: number, link: Interconnect) =>
    size > 1 ? (system.collectiveBaseUs + collectiveTimeUs(op, payload, size, link)) / 1e3 : 0;
  const exposedWhole = (fMs: number, bMs: number, blocks: number): RingAttention => ({
    forwardMs: blocks * core.forwardMs + fMs,
    backwardMs: blocks * core.backwardMs + bMs,
    commMs: fMs + bMs,
    exposedMs: fMs + bMs,
    exposedForwardMs: fMs,
  });
  const a2a = (size: number, link: Interconnect) => ({
    f: callMs('allToAll', bytes.q + bytes.kv, size, link) + callMs('allToAll', bytes.q, size, link),
    b: callMs('allToAll', bytes.q, size, link) + callMs('allToAll', bytes.q + bytes.kv, size, link),
  });
  if (x.type === 'a2a') {
    const e = a2a(cp, links.cp);
    return exposedWhole(e.f, e.b, cp - 1);
  }
  if (x.type === 'allgather') {
    const gathered = cp * bytes.kv;
    const ag = callMs('allGather', gathered, cp, links.cp);
    return exposedWhole(ag, ag + callMs('reduceScatter', gathered, cp, links.cp), cp - 1);
  }
  const [a, r] = x.hierarchical ?? [1, cp];
  const e = a2a(a, links.inner ?? links.cp);
  const ring = ringAttention(
    r,
    { forwardMs: a * core.forwardMs, backwardMs: a * core.backwardMs },
    bytes.kv,
    links.outer ?? links.cp,
    system,
  );
  return {
    forwardMs: (a - 1) * core.forwardMs + ring.forwardMs + e.f,
    backwardMs: (a - 1) * core.backwardMs + ring.backwardMs + e.b,
    commMs: ring.commMs + e.f + e.b,
    exposedMs: ring.exposedMs + e.f + e.b,
    exposedForwardMs: ring.exposedForwardMs + e.f,
  };
}
