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
  /** The logical tensor the call moved, as the caller named it ("mlp.reduce", "dp.grads.0"). */
  readonly tensor?: string;
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
 * What a data-parallel sync adds to its collective's event (a DP sync block of the timeline): the
 * bucket it moved, which sync it is — the gradients all-reduced (plain DDP) or reduce-scattered
 * (distributed optimizer), or the updated parameters all-gathered (distributed optimizer) — its
 * parameters in buffer order, its elements (padding included), and whether it was issued during
 * backward (overlapped) or after it.
 */
export interface DpSyncInfo {
  readonly sync: 'grad-all-reduce' | 'grad-reduce-scatter' | 'param-all-gather';
  readonly bucket: number;
  readonly buckets: number;
  readonly params: readonly string[];
  readonly numel: number;
  readonly overlapped: boolean;
  /** Gradients backward had still to produce when the sync was issued (0 after backward; > 0 overlapped with it). */
  readonly gradsToCome: number;
  /** The optimizer step (1-based) it belongs to. */
  readonly step: number;
}

/**
 * What a rank's routed-expert GEMMs add to their compute event (an MoE block's grouped GEMMs, forward
 * or backward): the global index of the rank's first local expert and the token rows each local
 * expert processed, local expert l being global expert firstExpert + l.
 */
export interface ExpertGemmInfo {
  readonly firstExpert: number;
  readonly tokens: readonly number[];
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
  /** Set on a data-parallel sync's collective (src/ranks/dp-train-programs.ts). */
  readonly dpSync?: DpSyncInfo;
  /** Set on an MoE block's expert GEMMs (src/parallel/moe-ep.ts). */
  readonly experts?: ExpertGemmInfo;
}

/** Duration of the phases named `name` (summed), in ms. */
export function phaseTime(e: TraceEvent, name: string): number {
  return e.phases.filter((p) => p.name === name).reduce((a, p) => a + (p.t1 - p.t0), 0);
}
