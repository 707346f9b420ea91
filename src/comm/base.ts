import type { TracePhase } from '../core/trace-event.ts';
import { sharedNow } from '../core/clock.ts';
import { formatShape, numel } from '../core/shape.ts';
import type { TraceSink } from '../core/trace-recorder.ts';
import {
  checkDivisible,
  named,
  outputShape,
  payloadBytes,
  resolveDim,
  type CollectiveCall,
  type Splits,
} from './call.ts';
import { checkSplits, peerBytes, type AllToAll, type AllToAllSplits } from './all-to-all.ts';
import type { CollectiveOp, Collectives, ReduceOp, TransportName } from './collectives.ts';
import { GroupBrokenError } from './errors.ts';
import { hostTensor, type HostTensor } from './host-tensor.ts';
import { sliceAlong } from './layout.ts';
import { partShape, sliceBlock } from './slice-parts.ts';
import type { TraceEvent } from '../core/trace-event.ts';
import type { GroupView } from '../mesh/process-group.ts';
import { P2PMismatchError, sameP2P, type P2PCall, type P2POp, type PointToPoint } from './p2p.ts';

/** A call before it is numbered: what the caller asks for. */
export type CallRequest = Omit<CollectiveCall, 'seq' | 'dtype'>;

/**
 * Receives a result in pieces: `data` holds elements [at, at + data.length) of the result. The
 * view may lie in the transport's shared memory: it is valid only until the call returns.
 */
export type ResultSink = (data: Float32Array, at: number) => void;

/** Opens a sink for a result of `shape` (called once per call, before any piece arrives). */
export type ResultTarget = (shape: readonly number[]) => ResultSink;

/**
 * A rank-local input that arrives in parts, in order (a GPU read-back in flight). For an
 * all-reduce or broadcast part k holds elements [bounds[k][0], bounds[k][1]) of the row-major
 * input, together covering [0, numel); for a reduce-scatter or all-gather the bounds are ranges
 * of one slice block, covering [0, A·M) (see CollectiveRunner.runParted).
 */
export interface PartedInput {
  readonly shape: readonly number[];
  readonly bounds: readonly (readonly [number, number])[];
  /** Part k's elements once they are here; the view stays valid until release(k). */
  part(k: number): Promise<Float32Array>;
  /** The transport is done with part k. */
  release(k: number): void;
}

/** A finished collective: the result (absent when it went to a ResultTarget), its timed phases and the bytes this rank sent. */
export interface Executed {
  readonly call: CollectiveCall;
  readonly out?: HostTensor;
  readonly phases: TracePhase[];
  readonly sentBytes: number;
}

/** What a wrapper (e.g. the GPU one) needs from a host communicator. */
export interface CollectiveRunner extends PointToPoint<HostTensor> {
  readonly rank: number;
  readonly size: number;
  readonly transport: TransportName;
  readonly sink: TraceSink;
  /** The mesh group this communicator serves (absent: a plain pool's one group, ranks 0…size−1). */
  readonly group?: GroupView;
  /**
   * True when the transport is done with the input array once run() settles (it copies what it
   * needs), so a caller may lend it memory that stops being valid then (a mapped GPU read-back).
   */
  readonly copiesInput: boolean;
  /**
   * Validates, numbers and runs one call on host data; records nothing. With `target` the result
   * is written there (straight from the transport's memory where it can) instead of returned.
   */
  run(req: CallRequest, x: HostTensor, target?: ResultTarget): Promise<Executed>;
  /**
   * The ops this transport moves part by part as their input arrives (runParted); for the others
   * a caller supplies the whole input to run().
   */
  readonly partedOps: readonly CollectiveOp[];
  /**
   * As run(), with the input in parts: part k moves through the ring while later parts are still
   * arriving, and its result pieces reach `target` before part k + 1 is awaited. Only for partedOps.
   * All-reduce and broadcast parts are element ranges of the input. Reduce-scatter and all-gather
   * parts are ranges [lo, hi) of one slice block (slice-parts.ts, from slicePartBounds): part k's
   * data is a reduce-scatter's input runs partRuns(lo, hi) concatenated, [rows, t, width], or an
   * all-gather's input elements [lo, hi).
   */
  runParted(req: CallRequest, x: PartedInput, target: ResultTarget): Promise<Executed>;
}

/** The trace event of one finished collective on `device`, spanning [t0, t1]. */
export function commEvent(
  r: CollectiveRunner,
  e: Executed,
  device: 'cpu' | 'gpu',
  t0: number,
  t1: number,
  phases: readonly TracePhase[],
): TraceEvent {
  const c = e.call;
  return {
    // The worker's own rank: in a mesh group, the member's global rank.
    rank: r.group ? r.group.members[r.rank]! : r.rank,
    stream: 'comm',
    op: c.op,
    shape: c.shape,
    bytes: payloadBytes(c, r.size),
    t0,
    t1,
    phases: [...phases],
    comm: {
      seq: c.seq,
      groupSize: r.size,
      transport: r.transport,
      dtype: c.dtype,
      device,
      sentBytes: e.sentBytes,
      ...(c.dim !== undefined && { dim: c.dim }),
      ...(c.reduceOp !== undefined && { reduceOp: c.reduceOp }),
      ...(c.root !== undefined && { root: c.root }),
      ...(c.tensor !== undefined && { tensor: c.tensor }),
      ...(c.splits && { peers: { ranks: r.group?.members ?? [...Array(r.size).keys()], ...peerBytes(c) } }),
    },
  };
}

/**
 * The full splits of an all-to-all on input `shape` (see AllToAllSplits): checked, and where recv
 * is absent but send given, the group's send counts exchanged first — an all-to-all of t counts on
 * the host, `<tensor>.counts`, on the trace as its own call.
 */
export async function resolveSplits(
  r: CollectiveRunner,
  shape: readonly number[],
  splits: AllToAllSplits | undefined,
  tensor: string | undefined,
): Promise<Splits> {
  const { send, recv } = checkSplits(shape, r.size, splits);
  if (recv) return { send, recv };
  const t0 = sharedNow();
  const ones = new Array<number>(r.size).fill(1);
  const req: CallRequest = {
    op: 'allToAll',
    shape: [r.size],
    splits: { send: ones, recv: ones },
    tensor: `${tensor ?? 'allToAll'}.counts`,
  };
  const e = await r.run(req, hostTensor([r.size], Float32Array.from(send)));
  r.sink.record(commEvent(r, e, 'cpu', t0, sharedNow(), e.phases));
  return { send, recv: Array.from(e.out!.data) };
}

/** A target that writes the result into the caller's `out`, which must hold exactly its numel. */
function intoArray(op: string, out: Float32Array): ResultTarget {
  return (shape) => {
    if (out.length !== numel(shape))
      throw new Error(
        `${op}: the result array holds ${out.length} values, but the result ${formatShape(shape)} has ${numel(shape)}; pass an array of that length.`,
      );
    return (d, at) => out.set(d, at);
  };
}

/**
 * Host-array collectives on top of one `execute` per transport: numbering, argument checks,
 * failure latching (a failed group refuses further calls) and one trace event per call.
 */
export abstract class BaseCollectives
  implements Collectives<HostTensor, Float32Array>, AllToAll<HostTensor, Float32Array>, CollectiveRunner
{
  private seq = 0;
  private failure: string | undefined;
  /** Point-to-point messages numbered per peer: sent to it, received from it. */
  private readonly p2pSent = new Map<number, number>();
  private readonly p2pReceived = new Map<number, number>();

  /** `group`: the mesh group this communicator serves (its errors name the group and each rank's coordinates). */
  constructor(
    readonly rank: number,
    readonly size: number,
    readonly transport: TransportName,
    readonly sink: TraceSink,
    readonly group?: GroupView,
  ) {}

  /** See CollectiveRunner.copiesInput; transports that keep no reference to the input set it. */
  readonly copiesInput: boolean = false;

  /**
   * #slowlink=r:f on this rank: every chunk it puts on the ring is moved `linkFactor` times (the
   * transport's own copies or messages, f× the bytes), so the hop out of this rank is f× slower by
   * real traffic; 1 (the default) moves each chunk once. See outCopies.
   */
  linkFactor = 1;

  /** Chunk copies this rank has put on the ring so far (each chunk counts linkFactor times). */
  chunkCopies = 0;

  /** Runs `write` (one copy of a chunk onto the ring) linkFactor times: the real one last. */
  protected outCopies(write: () => void): void {
    for (let i = 1; i < this.linkFactor; i++) write();
    write();
    this.chunkCopies += this.linkFactor;
  }

  /**
   * Moves the data of a numbered, validated call; identical `call` on every rank. Returns the
   * result, or (only when given a sink) writes it there and returns none.
   */
  protected abstract execute(call: CollectiveCall, x: HostTensor, sink?: ResultSink): Promise<Omit<Executed, 'call'>>;

  async run(req: CallRequest, x: HostTensor, target?: ResultTarget): Promise<Executed> {
    hostTensor(x.shape, x.data);
    return this.numbered(req, x.shape, target, (call, sink) => this.execute(call, x, sink));
  }

  /** See CollectiveRunner.partedOps: none unless a transport moves parts as they arrive. */
  readonly partedOps: readonly CollectiveOp[] = [];

  async runParted(req: CallRequest, x: PartedInput, target: ResultTarget): Promise<Executed> {
    if (!this.partedOps.includes(req.op))
      throw new Error(`${this.transport}: ${req.op} does not take its input in parts; pass the whole input to run().`);
    // All-reduce, broadcast: parts of the flat input. Reduce-scatter, all-gather: parts of one slice block.
    const sliced = req.op === 'reduceScatter' || req.op === 'allGather';
    const block = sliced ? sliceBlock(req.op, x.shape, resolveDim(req.op, x.shape, req.dim!), this.size) : undefined;
    if (req.op === 'reduceScatter') checkDivisible(req.op, x.shape, resolveDim(req.op, x.shape, req.dim!), this.size);
    const cover = block ? block.a * block.m : numel(x.shape);
    let end = 0;
    for (const [lo, hi] of x.bounds) {
      if (lo !== end || hi <= lo) throw new Error(`${req.op}: input parts must be consecutive and non-empty.`);
      if (block) partShape(lo, hi, block.m);
      end = hi;
    }
    if (end !== cover) throw new Error(`${req.op}: input parts cover ${end} of ${cover} elements.`);
    return this.numbered(req, x.shape, target, (call, sink) => this.executeParted(call, x, sink!));
  }

  /** Moves a numbered call whose input arrives in parts (transports with partedOps override it). */
  protected executeParted(call: CollectiveCall, _x: PartedInput, _sink: ResultSink): Promise<Omit<Executed, 'call'>> {
    throw new Error(`${this.transport}: ${call.op} does not take its input in parts.`);
  }

  /** Validates and numbers a call, runs `move`, latches a failure. */
  private async numbered(
    req: CallRequest,
    shape: readonly number[],
    target: ResultTarget | undefined,
    move: (call: CollectiveCall, sink: ResultSink | undefined) => Promise<Omit<Executed, 'call'>>,
  ): Promise<Executed> {
    if (this.failure !== undefined) throw new GroupBrokenError(this.rank, this.failure, this.group);
    const checked = this.validate(req, shape);
    // Opened before the call is numbered: a target that refuses the shape fails like a bad argument.
    const sink = target?.(outputShape({ ...checked, seq: 0 }, this.size));
    const call: CollectiveCall = { ...checked, seq: ++this.seq };
    try {
      const done = await move(call, sink);
      if (sink && done.out) sink(done.out.data, 0);
      else if (!target && !done.out) throw new Error(`${this.transport}: ${call.op} returned no result.`);
      return { call, ...done, ...(target && { out: undefined }) };
    } catch (e) {
      this.failure = e instanceof Error ? e.message : String(e);
      throw e;
    }
  }

  /**
   * Moves a numbered message to its peer (`call.to`); resolves once the peer holds it (or the
   * transport has it buffered for the peer). `data` may be reused by the caller once it resolves.
   */
  protected abstract p2pSend(call: P2PCall, data: Float32Array): Promise<void>;

  /** Resolves with message number `expect.seq` from `expect.from`, whatever it holds (the caller checks it). */
  protected abstract p2pRecv(expect: P2PCall): Promise<{ readonly call: P2PCall; readonly data: Float32Array }>;

  /** See PointToPoint: every op checked before any is numbered; a failure latches like a collective's. */
  async batchIsendIrecv(ops: readonly P2POp<HostTensor>[]): Promise<HostTensor[]> {
    if (this.failure !== undefined) throw new GroupBrokenError(this.rank, this.failure, this.group);
    const shapes = ops.map((o) => this.checkP2P(o));
    const next = (m: Map<number, number>, peer: number): number => {
      m.set(peer, (m.get(peer) ?? 0) + 1);
      return m.get(peer)!;
    };
    const calls = ops.map((o, i): P2PCall => {
      const send = o.op === 'send';
      const seq = next(send ? this.p2pSent : this.p2pReceived, o.peer);
      const [from, to] = send ? [this.rank, o.peer] : [o.peer, this.rank];
      return { seq, from, to, dtype: 'f32', shape: shapes[i]!, ...named(o.tensor) };
    });
    try {
      const moved = await Promise.all(
        ops.map(async (o, i) => {
          if (o.op === 'send') return void (await this.p2pSend(calls[i]!, o.x.data));
          const got = await this.p2pRecv(calls[i]!);
          if (!sameP2P(got.call, calls[i]!)) throw new P2PMismatchError(calls[i]!, got.call, this.group);
          return hostTensor(calls[i]!.shape, got.data);
        }),
      );
      return moved.filter((y): y is HostTensor => y !== undefined);
    } catch (e) {
      this.failure ??= e instanceof Error ? e.message : String(e);
      throw e;
    }
  }

  async send(x: HostTensor, peer: number, tensor?: string): Promise<void> {
    await this.batchIsendIrecv([{ op: 'send', peer, x, ...named(tensor) }]);
  }

  async recv(shape: readonly number[], peer: number, tensor?: string): Promise<HostTensor> {
    const [y] = await this.batchIsendIrecv([{ op: 'recv', peer, shape, ...named(tensor) }]);
    return y!;
  }

  /** The shape an op moves, once its peer and shape are checked. */
  private checkP2P(o: P2POp<HostTensor>): readonly number[] {
    const what = `${o.op}(peer ${o.peer})`;
    if (!(Number.isInteger(o.peer) && o.peer >= 0 && o.peer < this.size))
      throw new Error(`${what}: peer ${o.peer} is not a rank of this group of ${this.size} (0…${this.size - 1}).`);
    if (o.peer === this.rank) throw new Error(`${what}: rank ${this.rank} cannot send to or receive from itself.`);
    const shape = o.op === 'send' ? hostTensor(o.x.shape, o.x.data).shape : o.shape;
    if (shape.length > 8 || !shape.every((d) => Number.isInteger(d) && d >= 0))
      throw new Error(`${what}: shape ${formatShape(shape)} must be at most 8 whole dims.`);
    return [...shape];
  }

  /** Marks the group failed so later calls throw GroupBrokenError. */
  protected fail(reason: string): void {
    this.failure ??= reason;
  }

  private validate(req: CallRequest, shape: readonly number[]): Omit<CollectiveCall, 'seq'> {
    let dim = req.dim;
    if (dim !== undefined) {
      dim = resolveDim(req.op, shape, dim);
      if (req.op === 'reduceScatter') checkDivisible(req.op, shape, dim, this.size);
    }
    if (req.root !== undefined && !(Number.isInteger(req.root) && req.root >= 0 && req.root < this.size)) {
      throw new Error(`${req.op}: root ${req.root} is not a rank of a group of ${this.size}.`);
    }
    if (shape.length > 8) throw new Error(`${req.op}: tensors of more than 8 dims are not supported.`);
    if (req.op === 'allToAll') {
      const s = checkSplits(shape, this.size, req.splits);
      if (!s.recv) throw new Error('allToAll: run() takes both splits; resolve them first (resolveSplits).');
      return { ...req, dtype: 'f32', shape: [...shape], splits: { send: s.send, recv: s.recv } };
    }
    return { ...req, dim, dtype: 'f32', shape: [...shape] };
  }

  /** With `out`, the result is written into it (straight from the transport's memory where it can). */
  private async traced(req: CallRequest, x: HostTensor, out?: Float32Array): Promise<HostTensor> {
    const t0 = sharedNow();
    const e = await this.run(req, x, out && intoArray(req.op, out));
    this.sink.record(commEvent(this, e, 'cpu', t0, sharedNow(), e.phases));
    return e.out ?? hostTensor(outputShape(e.call, this.size), out);
  }

  // `out`: the array the result is written into and wrapped by (see Collectives): it must hold
  // numel of the result; reused call after call it saves faulting in fresh memory for each result.

  allReduce(x: HostTensor, op: ReduceOp = 'sum', tensor?: string, out?: Float32Array): Promise<HostTensor> {
    return this.traced({ op: 'allReduce', shape: x.shape, reduceOp: op, ...named(tensor) }, x, out);
  }

  reduceScatter(
    x: HostTensor,
    dim: number,
    op: ReduceOp = 'sum',
    tensor?: string,
    out?: Float32Array,
  ): Promise<HostTensor> {
    return this.traced({ op: 'reduceScatter', shape: x.shape, dim, reduceOp: op, ...named(tensor) }, x, out);
  }

  allGather(x: HostTensor, dim: number, tensor?: string, out?: Float32Array): Promise<HostTensor> {
    return this.traced({ op: 'allGather', shape: x.shape, dim, ...named(tensor) }, x, out);
  }

  broadcast(x: HostTensor, root: number, tensor?: string, out?: Float32Array): Promise<HostTensor> {
    return this.traced({ op: 'broadcast', shape: x.shape, root, ...named(tensor) }, x, out);
  }

  ringExchange(x: HostTensor, tensor?: string, out?: Float32Array): Promise<HostTensor> {
    return this.traced({ op: 'ringExchange', shape: x.shape, ...named(tensor) }, x, out);
  }

  async barrier(): Promise<void> {
    await this.traced({ op: 'barrier', shape: [] }, hostTensor([], new Float32Array(1)));
  }

  async allToAll(x: HostTensor, splits?: AllToAllSplits, tensor?: string, out?: Float32Array): Promise<HostTensor> {
    const s = await resolveSplits(this, x.shape, splits, tensor);
    return this.traced({ op: 'allToAll', shape: x.shape, splits: s, ...named(tensor) }, x, out);
  }

  async shard(x: HostTensor, dim: number): Promise<HostTensor> {
    const d = resolveDim('shard', x.shape, dim);
    checkDivisible('shard', x.shape, d, this.size);
    return sliceAlong(x, d, this.size, this.rank);
  }
}
