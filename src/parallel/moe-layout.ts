import { maxMeshRanks, type MeshDegrees } from '../mesh/rank-layout.ts';
import type { MoeConfig } from '../reference/moe/config.ts';

// How an MoE block is laid over the ranks (Megatron-Core core_v0.19.0 parallel_state.py "parallel
// folding"): the attention mesh tp·dp and the expert mesh etp·ep·edp share the same N ranks,
// N = tp·dp = etp·ep·edp (cp = pp = 1 here). The MoE region's tokens are each rank's sequence
// shard under SP, so every rank routes tokens of its own.

/** moe_token_dispatcher_type: the two Megatron dispatchers executed here ('flex' needs DeepEP). */
export type MoeDispatcher = 'alltoall' | 'allgather';

/** The MoE block's parallel layout: tensor parallel (with or without SP), expert parallel, expert tensor parallel, the dispatcher. */
export interface MoeLayout {
  /** tensor_model_parallel_size of the attention mesh. */
  readonly tp: number;
  /** sequence_parallel: each TP rank holds its own shard of the tokens in the MoE region. */
  readonly sp: boolean;
  /** expert_model_parallel_size: E/ep experts per rank. */
  readonly ep: number;
  /** expert_tensor_parallel_size: each expert's SwiGLU split over etp ranks (f/etp columns of fc1's gate and up, rows of fc2). */
  readonly etp: number;
  readonly dispatcher: MoeDispatcher;
}

/** EP only: tp 1, etp 1, the alltoall dispatcher. */
export function moeLayout(ep: number, overrides: Partial<MoeLayout> = {}): MoeLayout {
  return { tp: 1, sp: false, ep, etp: 1, dispatcher: 'alltoall', ...overrides };
}

/** The fewest ranks both meshes fold onto: N = lcm(tp, etp·ep). */
export function moeWorld(l: MoeLayout): number {
  const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
  return (l.tp * l.etp * l.ep) / gcd(l.tp, l.etp * l.ep);
}

/** The mesh degrees of a layout's pool: tp, dp = N/tp, ep, etp (edp = N/(etp·ep) follows). */
export function moeMeshDegrees(l: MoeLayout): Partial<MeshDegrees> {
  return { tp: l.tp, dp: moeWorld(l) / l.tp, ep: l.ep, etp: l.etp };
}

/** A refusal of Megatron-LM's, as data: where it is raised, the exception, its message. */
export interface MegatronRefusal {
  /** File and lines at core_v0.19.0. */
  readonly source: string;
  readonly error: 'ValueError' | 'AssertionError';
  readonly message: string;
}

/**
 * Why Megatron refuses the layout in training, or null: MoE with TP > 1 and no sequence
 * parallelism (moe_layer.py MoELayer.forward) — without SP every TP rank holds the same tokens, so
 * each is routed, dispatched and computed tp times (seed 002 M036).
 */
export function moeTrainingRefusal(l: MoeLayout): MegatronRefusal | null {
  if (!(l.tp > 1 && !l.sp)) return null;
  return {
    source: 'megatron/core/transformer/moe/moe_layer.py:629-633',
    error: 'ValueError',
    message:
      'During training, performance may degrade if MoE and tensor parallelism are enabled without also enabling sequence parallelism.',
  };
}

const whole = (v: number): boolean => Number.isInteger(v) && v >= 1;

/**
 * Every reason the layout cannot run `c`, one message each naming the setting and its legal
 * values; empty when it runs. Megatron's refusals cite their line at core_v0.19.0. With
 * `demonstration`, TP > 1 without SP runs (the M036 demonstration; moeTrainingRefusal says why
 * Megatron would not).
 */
export function moeLayoutErrors(c: MoeConfig, l: MoeLayout, opts: { readonly demonstration?: boolean } = {}): string[] {
  const errors: string[] = [];
  for (const k of ['tp', 'ep', 'etp'] as const)
    if (!whole(l[k])) errors.push(`${k} is ${l[k]}; write a whole number ≥ 1.`);
  if (errors.length > 0) return errors;
  const N = moeWorld(l);
  if (N > maxMeshRanks)
    errors.push(
      `tp ${l.tp} and etp ${l.etp} × ep ${l.ep} fold onto ${N} ranks, more than the ${maxMeshRanks} here; lower ep or etp so that lcm(tp, etp·ep) ≤ ${maxMeshRanks}.`,
    );
  const E = c.numMoeExperts;
  // megatron/training/arguments.py:1602 "Number of experts should be a multiple of expert model parallel_size."
  if (E % l.ep !== 0)
    errors.push(
      `ep ${l.ep} does not divide ${E} experts (Megatron: "Number of experts should be a multiple of expert model parallel_size"); pick ep in {${divisors(E).join(', ')}}.`,
    );
  if (c.moeFfnHiddenSize % l.etp !== 0)
    errors.push(
      `etp ${l.etp} does not divide moeFfnHiddenSize ${c.moeFfnHiddenSize} (each expert's fc1 is split by columns over etp ranks); pick etp in {${divisors(c.moeFfnHiddenSize).join(', ')}}.`,
    );
  if (l.dispatcher !== 'alltoall' && l.dispatcher !== 'allgather')
    errors.push(`dispatcher is "${String(l.dispatcher)}"; write "alltoall" or "allgather".`);
  const refusal = moeTrainingRefusal(l);
  if (refusal && !opts.demonstration)
    errors.push(
      `tp ${l.tp} without sequence parallelism: Megatron refuses it in training (${refusal.source}, ${refusal.error}: "${refusal.message}"); turn sp on, or run it as the M036 demonstration.`,
    );
  const fs = c.moeSharedExpertIntermediateSize;
  if (fs !== null && fs % l.tp !== 0)
    errors.push(
      `tp ${l.tp} does not divide moeSharedExpertIntermediateSize ${fs} (the shared expert is split like the dense MLP); pick a shared expert width divisible by ${l.tp}.`,
    );
  return errors;
}

/** Divisors of n, ascending. */
function divisors(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i + 1).filter((d) => n % d === 0);
}
