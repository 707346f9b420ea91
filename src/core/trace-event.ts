/** Which lane of a rank an event sits on: kernels on `compute`, collectives on `comm`. */
export type TraceStream = 'compute' | 'comm';

/** A named sub-interval of an event, on the shared clock (ms), e.g. readback / transport / upload. */
export interface TracePhase {
  readonly name: string;
  readonly t0: number;
  readonly t1: number;
}

/** What a collective adds to its event. `sentBytes` are the bytes this rank sent on the ring. */
export interface CommInfo {
  /** Per-rank call number, 1-based; equal on every rank for the same call. */
  readonly seq: number;
  readonly groupSize: number;
  readonly transport: string;
  readonly dtype: string;
  /** Where the tensor lived: host array or GPU buffer (read back → move → upload). */
  readonly device: 'cpu' | 'gpu';
  readonly sentBytes: number;
  readonly dim?: number;
  readonly reduceOp?: string;
  readonly root?: number;
  /** An all-to-all's traffic per peer. */
  readonly peers?: PeerBytes;
}

/**
 * Bytes a rank's all-to-all sent to and received from each rank of its group, index = group rank
 * (its own entry: the rows it kept, copied locally); `ranks[j]` is group rank j's global rank.
 */
export interface PeerBytes {
  readonly ranks: readonly number[];
  readonly sentBytes: readonly number[];
  readonly receivedBytes: readonly number[];
}

/**
 * One slice of a rank's timeline: [t0, t1] in ms on the shared clock (`sharedNow`).
 * `shape` is the rank-local input shape; `bytes` the payload (for collectives, the nccl-tests
 * size: all-reduce/broadcast = tensor, reduce-scatter = input, all-gather = output).
 */
export interface TraceEvent {
  readonly rank: number;
  readonly stream: TraceStream;
  readonly op: string;
  readonly shape: readonly number[];
  readonly bytes: number;
  readonly t0: number;
  readonly t1: number;
  readonly phases: readonly TracePhase[];
  readonly flops?: number;
  readonly comm?: CommInfo;
}

/** Duration of the phases named `name` (summed), in ms. */
export function phaseTime(e: TraceEvent, name: string): number {
  return e.phases.filter((p) => p.name === name).reduce((a, p) => a + (p.t1 - p.t0), 0);
}
