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
 * A pipeline point-to-point message as one end saw it (src/ranks/pipeline-programs.ts): the send
 * (posted → completed) or the receive (called → arrived) of virtual stage `virtualStage`'s output
 * activation (forward, stage s → s + 1) or of its gradient (backward, s + 1 → s), for one
 * micro-batch. Both ends record an event; `from`/`to` are global ranks, so a view pairs a send with
 * its receive by (from, to, tensor) and draws the arrow from the send's t0 to the receive's t1.
 */
export interface P2PMessageInfo {
  readonly kind: 'send' | 'recv';
  readonly carries: 'activation' | 'gradient';
  readonly from: number;
  readonly to: number;
  readonly fromStage: number;
  readonly toStage: number;
  readonly virtualStage: number;
  readonly microBatch: number;
  /** "act.k.j" / "grad.k.j": the message's name on the wire (its fingerprint's). */
  readonly tensor: string;
}

/** A pipeline pass a rank ran: F (forward), B (backward, or its input-gradient half under ZB-H1), W (weight gradients). */
export interface PipelinePassInfo {
  readonly pass: 'F' | 'B' | 'W';
  readonly stage: number;
  readonly chunk: number;
  readonly microBatch: number;
  /** The rank's live GPU buffer bytes at the pass's end. */
  readonly liveBytes?: number;
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

/** The step's pass an event belongs to: forward, backward, or the gradients' finalize reductions (the plan's OpPhase). */
export type TracePass = 'forward' | 'backward' | 'finalize';

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
  /** Set on a pipeline p2p message (stream 'comm', op "p2p.send" / "p2p.recv"). */
  readonly p2p?: P2PMessageInfo;
  /** Set on a pipeline pass's span (stream 'compute', op "pipeline.F" / ".B" / ".W"): its kernels' whole time. */
  readonly pipelinePass?: PipelinePassInfo;
  /** Set on an MoE block's expert GEMMs (src/parallel/moe-ep.ts). */
  readonly experts?: ExpertGemmInfo;
  /** The pass the rank was in when it recorded the event (TraceRecorder.setPass); absent where its program marks none. */
  readonly phase?: TracePass;
}

/** Duration of the phases named `name` (summed), in ms. */
export function phaseTime(e: TraceEvent, name: string): number {
  return e.phases.filter((p) => p.name === name).reduce((a, p) => a + (p.t1 - p.t0), 0);
}
