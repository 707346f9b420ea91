import type { HostTensor } from './host-tensor.ts';

/** Elementwise reduction of a collective. */
export type ReduceOp = 'sum' | 'max';

/** Which transport carried a collective. */
export type TransportName = 'in-process' | 'sab-ring' | 'message-port';

/** The collective operations, named as in the fingerprint and the trace. */
export type CollectiveOp =
  | 'allReduce'
  | 'reduceScatter'
  | 'allGather'
  | 'broadcast'
  | 'barrier'
  | 'ringExchange'
  | 'allToAll';

/** The three collectives a ring runs as reduce-scatter and/or all-gather phases. */
export type RingCollectiveOp = Extract<CollectiveOp, 'allReduce' | 'reduceScatter' | 'allGather'>;

/**
 * The communicator of one rank in a tensor-parallel group of `size` ranks. Every rank of the
 * group must make the same calls in the same order (checked by fingerprint); a tensor `T` is a
 * `HostTensor` or a GPU tensor, with the same semantics.
 *
 * - allReduce: [..] on every rank → [..] = Σ_r (or max_r) of the inputs, on every rank. Any size.
 * - reduceScatter(dim): [.., D, ..] → [.., D/t, ..], rank r keeps slice r of the reduction.
 * - allGather(dim): [.., D/t, ..] → [.., D, ..], slices concatenated in rank order.
 * - broadcast(root): [..] → root's [..] on every rank.
 * - barrier: returns once every rank has arrived.
 * - ringExchange: one ring step, [..] → [..]: rank r sends its tensor to rank r + 1 and returns
 *   the one rank r − 1 sent (mod t); the step of a chunked all-gather + GEMM (tp-overlap.ts).
 * - shard(dim): local, no communication: [.., D, ..] → this rank's slice [.., D/t, ..].
 * A dim not divisible by t throws before anything moves. `tensor` names the logical tensor moved
 * ("mlp.reduce"); it is part of the fingerprint, so two same-shape calls in swapped order fail.
 * `out` (`O`: host collectives take a Float32Array, GPU collectives a GPU tensor) is the memory the
 * result is written into and returned in, instead of new memory: a caller's buffer reused call
 * after call, or the input's own (in place: the input is read before the result is written).
 */
export interface Collectives<T = HostTensor, O = never> {
  readonly rank: number;
  readonly size: number;
  readonly transport: TransportName;
  allReduce(x: T, op?: ReduceOp, tensor?: string, out?: O): Promise<T>;
  reduceScatter(x: T, dim: number, op?: ReduceOp, tensor?: string, out?: O): Promise<T>;
  allGather(x: T, dim: number, tensor?: string, out?: O): Promise<T>;
  broadcast(x: T, root: number, tensor?: string, out?: O): Promise<T>;
  barrier(): Promise<void>;
  ringExchange(x: T, tensor?: string, out?: O): Promise<T>;
  shard(x: T, dim: number): Promise<T>;
}
