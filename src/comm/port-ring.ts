import { numel } from '../core/shape.ts';
import { phaseClock } from '../core/clock.ts';
import type { TraceSink } from '../core/trace-recorder.ts';
import { BaseCollectives, type Executed } from './base.ts';
import { callsAgree, outputShape, type CollectiveCall } from './call.ts';
import { CollectiveAbortedError, CollectiveMismatchError, CollectiveTimeoutError } from './errors.ts';
import { hostTensor, type HostTensor } from './host-tensor.ts';
import { offsets, rowElems } from './all-to-all.ts';
import { accumulate, chunkBounds, packSlices, unpackSlices } from './layout.ts';
import { Mailbox, messageKey, type PortMessage } from './mailbox.ts';
import type { GroupView } from '../mesh/process-group.ts';
import { P2PTimeoutError, type P2PCall } from './p2p.ts';
import { agRecvChunk, agSendChunk, ringNeighbours, rsRecvChunk, rsSendChunk, ringSentBytes } from './ring-schedule.ts';

/**
 * Ring collectives over MessagePort (no cross-origin isolation needed): every step posts one
 * chunk to rank r+1 (buffer transferred) and awaits one from rank r−1. Fingerprints go to all peers.
 * `ports[q]` is this rank's end of the channel to rank q (undefined at q = rank).
 */
export class PortRingCollectives extends BaseCollectives {
  private readonly boxes: (Mailbox | undefined)[];
  private readonly ports: readonly (MessagePort | undefined)[];

  constructor(
    rank: number,
    size: number,
    ports: readonly (MessagePort | undefined)[],
    sink: TraceSink,
    private readonly timeoutMs: number,
    group?: GroupView,
  ) {
    super(rank, size, 'message-port', sink, group);
    if (ports.length !== size)
      throw new Error(`PortRingCollectives: rank ${rank} needs ${size} port slots, got ${ports.length}.`);
    this.ports = ports;
    this.boxes = ports.map((p, q) => (p && q !== rank ? new Mailbox(p) : undefined));
  }

  /** Fails pending and later calls with a CollectiveAbortedError carrying `reason`. */
  abort(reason: string): void {
    this.fail(reason);
    const e = new CollectiveAbortedError(this.rank, undefined, reason, this.group);
    this.boxes.forEach((b) => b?.abort(e));
  }

  /** Closes every port. */
  close(): void {
    this.ports.forEach((p) => p?.close());
  }

  private post(q: number, m: PortMessage): void {
    this.ports[q]!.postMessage(m, m.kind === 'fp' ? [] : [m.data.buffer]);
  }

  /** Posts a copy of the message (transferred) to its receiver; a send never waits. */
  protected async p2pSend(call: P2PCall, data: Float32Array): Promise<void> {
    this.post(call.to, { kind: 'p2p', seq: call.seq, call, data: data.slice() });
  }

  protected async p2pRecv(expect: P2PCall): Promise<{ call: P2PCall; data: Float32Array }> {
    const m = await this.boxes[expect.from]!.receive(
      messageKey({ kind: 'p2p', seq: expect.seq }),
      this.timeoutMs,
      () => new P2PTimeoutError(expect, 'recv', this.timeoutMs, this.group),
    );
    return m as PortMessage & { kind: 'p2p' };
  }

  protected async execute(call: CollectiveCall, x: HostTensor): Promise<Omit<Executed, 'call'>> {
    const { phases, mark } = phaseClock();
    await this.agree(call);
    mark('sync');
    const out = await this.move(call, x, mark);
    return { out, phases, sentBytes: ringSentBytes(call, this.size, this.rank) };
  }

  /** Exchanges fingerprints with every peer; throws on any difference or missing peer. */
  private async agree(call: CollectiveCall): Promise<void> {
    const key = messageKey({ kind: 'fp', seq: call.seq });
    const others = this.boxes.flatMap((b, q) => (b ? [q] : []));
    others.forEach((q) => this.post(q, { kind: 'fp', seq: call.seq, call }));
    const timeout = (): Error => new Error('timeout');
    const got = await Promise.allSettled(others.map((q) => this.boxes[q]!.receive(key, this.timeoutMs, timeout)));
    const aborted = got.find((g) => g.status === 'rejected' && g.reason instanceof CollectiveAbortedError);
    if (aborted?.status === 'rejected') throw aborted.reason;
    const missing = others.filter((_, i) => got[i].status === 'rejected');
    if (missing.length)
      throw new CollectiveTimeoutError(this.rank, call, missing, this.timeoutMs, 'arrival', this.group);
    const calls: CollectiveCall[] = new Array(this.size);
    calls[this.rank] = call;
    others.forEach((q, i) => (calls[q] = (got[i] as PromiseFulfilledResult<PortMessage & { kind: 'fp' }>).value.call));
    if (!callsAgree(calls)) throw new CollectiveMismatchError(this.rank, calls, this.group);
  }

  /** The chunk of ring step `step` from rank `from` (default r−1): its first `len` values (a slowed sender sends them linkFactor times over). */
  private async recvStep(
    call: CollectiveCall,
    step: number,
    len: number,
    from = ringNeighbours(this.rank, this.size).prev,
  ): Promise<Float32Array> {
    const m = await this.boxes[from]!.receive(
      messageKey({ kind: 'data', seq: call.seq, step }),
      this.timeoutMs,
      () => new CollectiveTimeoutError(this.rank, call, [from], this.timeoutMs, 'transfer', this.group),
    );
    return (m as PortMessage & { kind: 'data' }).data.subarray(0, len);
  }

  /** Posts one ring step's chunk to rank `to` (default r+1): under #slowlink the message holds linkFactor copies of it (f× the bytes moved). */
  private sendStep(
    call: CollectiveCall,
    step: number,
    data: Float32Array,
    to = ringNeighbours(this.rank, this.size).next,
  ): void {
    const out = new Float32Array(data.length * this.linkFactor);
    let at = 0;
    this.outCopies(() => {
      out.set(data, at);
      at += data.length;
    });
    this.post(to, { kind: 'data', seq: call.seq, step, data: out });
  }

  /**
   * An all-to-all: rank r posts input rows [off(send)[q], + send[q]) to every other rank q (one
   * message each, empty ones too), keeps its own, and copies what each q sent into result rows
   * [off(recv)[q], + recv[q]).
   */
  private async moveAllToAll(call: CollectiveCall, x: HostTensor, mark: (name: string) => void): Promise<HostTensor> {
    const { rank: r, size: t } = this;
    const { send, recv } = call.splits!;
    const row = rowElems(call.shape);
    const [from, into] = [offsets(send), offsets(recv)];
    const rows = (data: Float32Array, at: number, n: number): Float32Array => data.subarray(at * row, (at + n) * row);
    const peers = [...Array(t).keys()].map((k) => (r + k) % t).slice(1);
    for (const q of peers) this.sendStep(call, 0, rows(x.data, from[q]!, send[q]!), q);
    mark('stage');
    const got = await Promise.all(peers.map((q) => this.recvStep(call, 0, recv[q]! * row, q)));
    mark('transport');
    const shape = outputShape(call, t);
    const out = new Float32Array(numel(shape));
    out.set(rows(x.data, from[r]!, send[r]!), into[r]! * row);
    peers.forEach((q, i) => out.set(got[i]!, into[q]! * row));
    mark('unstage');
    return hostTensor(shape, out);
  }

  private async move(call: CollectiveCall, x: HostTensor, mark: (name: string) => void): Promise<HostTensor> {
    const { rank: r, size: t } = this;
    const shape = outputShape(call, t);
    if (call.op === 'barrier') return (mark('transport'), x);
    if (call.op === 'allToAll') return this.moveAllToAll(call, x, mark);
    if (call.op === 'ringExchange') {
      // One ring step: post a copy of the tensor to r + 1, take r − 1's (at t = 1 the rank's own).
      if (t > 1) this.sendStep(call, 0, x.data);
      mark('stage');
      const got = t > 1 ? await this.recvStep(call, 0, numel(shape)) : x.data;
      mark('transport');
      const out = t > 1 && got.byteLength === got.buffer.byteLength ? got : got.slice();
      mark('unstage');
      return hostTensor(shape, out);
    }
    const n = call.op === 'allGather' ? numel(shape) : numel(call.shape);
    const work = new Float32Array(n);
    const bounds = (c: number): [number, number] => chunkBounds(n, t, c);
    const view = (c: number): Float32Array => work.subarray(...bounds(c));
    if (call.op === 'allGather') work.set(x.data, bounds(r)[0]);
    else if (call.op === 'reduceScatter') packSlices(x.data, x.shape, call.dim!, t, work);
    else if (call.op === 'allReduce' || r === call.root) work.set(x.data);
    mark('stage');
    let step = 0;
    if (call.op === 'allReduce' || call.op === 'reduceScatter') {
      for (let k = 0; k < t - 1; k++, step++) {
        this.sendStep(call, step, view(rsSendChunk(r, k, t)));
        const into = view(rsRecvChunk(r, k, t));
        accumulate(into, await this.recvStep(call, step, into.length), call.reduceOp!);
      }
    }
    if (call.op === 'allReduce' || call.op === 'allGather') {
      for (let k = 0; k < t - 1; k++, step++) {
        this.sendStep(call, step, view(agSendChunk(r, k, t)));
        const into = view(agRecvChunk(r, k, t));
        into.set(await this.recvStep(call, step, into.length));
      }
    }
    if (call.op === 'broadcast') {
      if (r !== call.root) work.set(await this.recvStep(call, 0, work.length));
      if (ringNeighbours(r, t).next !== call.root) this.sendStep(call, 0, work);
    }
    mark('transport');
    const out = new Float32Array(numel(shape));
    if (call.op === 'reduceScatter') out.set(view(r));
    else if (call.op === 'allGather') unpackSlices(work, shape, call.dim!, t, out);
    else out.set(work);
    mark('unstage');
    return hostTensor(shape, out);
  }
}

/** Wires t port-ring communicators in this thread (one MessageChannel per pair of ranks). */
export function createPortMesh(size: number): (MessagePort | undefined)[][] {
  const ports: (MessagePort | undefined)[][] = Array.from({ length: size }, () => new Array(size).fill(undefined));
  for (let a = 0; a < size; a++) {
    for (let b = a + 1; b < size; b++) {
      const ch = new MessageChannel();
      ports[a][b] = ch.port1;
      ports[b][a] = ch.port2;
    }
  }
  return ports;
}
