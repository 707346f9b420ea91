import { numel } from '../core/shape.ts';
import { phaseClock } from '../core/clock.ts';
import type { TraceSink } from '../core/trace-recorder.ts';
import { BaseCollectives, type Executed, type PartedInput, type ResultSink } from './base.ts';
import type { CollectiveOp } from './collectives.ts';
import { callsAgree, formatCall, outputShape, type CollectiveCall } from './call.ts';
import { allToAllSentBytes, offsets, rowElems } from './all-to-all.ts';
import { CollectiveAbortedError, CollectiveMismatchError, CollectiveTimeoutError } from './errors.ts';
import { hostTensor, type HostTensor } from './host-tensor.ts';
import { chunkBounds, gatherSlices, packSlices } from './layout.ts';
import { partShape, sliceBlock, type SliceBlock } from './slice-parts.ts';
import { ringNeighbours, rsRecvChunk, ringSentBytes } from './ring-schedule.ts';
import { simdReducer, type ReduceKernel } from './simd-reduce.ts';
import {
  ctrl,
  readFingerprint,
  readP2PFingerprint,
  readSplits,
  sabAbortReason,
  sameFingerprint,
  storedP2P,
  writeFingerprint,
  writeP2PFingerprint,
  writeSplits,
  type SabRing,
} from './sab-layout.ts';
import { rankName, type GroupView } from '../mesh/process-group.ts';
import { formatP2P, P2PTimeoutError, sameP2P, type P2PCall } from './p2p.ts';

type WaitAsync = (a: Int32Array, i: number, v: number, ms: number) => { async: boolean; value: unknown };

/**
 * Resolves once word `idx` may have changed from `value` (notified), or after about `ms`, without
 * blocking the thread: Atomics.waitAsync where there is one, else a 1 ms timer (Node 20 has none).
 */
function changed(words: Int32Array, idx: number, value: number, ms: number): Promise<unknown> {
  const waitAsync = (Atomics as unknown as { waitAsync?: WaitAsync }).waitAsync;
  if (!waitAsync) return new Promise((r) => setTimeout(r, 1));
  const w = waitAsync(words, idx, value, ms);
  return w.async ? (w.value as Promise<unknown>) : Promise.resolve();
}

/** Elements an all-reduce copies into its slot and reduces at a time (256 KiB: within a core's L2). */
const pieceElems = 1 << 16;

/**
 * Ring collectives in shared memory (workers only: blocks in Atomics.wait; an all-to-all built with
 * waits 'yield' waits without blocking instead, so that all ranks may share one thread, as in the
 * unit tests). Each rank's data buffer
 * is its ring slot; reduce-scatter steps read rank r−1's slot in place and add into this rank's own
 * chunk, so a step moves exactly the chunk the ring model sends; gathers then read each piece from
 * the slot that holds it, as many bytes per rank as the ring's all-gather receives. progress[r]
 * counts finished steps; a step waits on progress[r−1] (data ready), a gather on its source's.
 */
export class SabRingCollectives extends BaseCollectives {
  private readonly c: Int32Array;
  private readonly f32: Float32Array;
  private readonly reduce: ReduceKernel;
  private step = 0;
  /**
   * The last call in flight: each call starts once the one before has settled, so a call that waits
   * without blocking (an all-to-all, a part still being read back) is never overtaken by the next
   * one's arrival, after which the other ranks may overwrite their slots.
   */
  private last: Promise<unknown> = Promise.resolve();

  constructor(
    rank: number,
    size: number,
    private readonly ring: SabRing,
    sink: TraceSink,
    private readonly timeoutMs: number,
    group?: GroupView,
    private readonly waits: 'block' | 'yield' = 'block',
  ) {
    super(rank, size, 'sab-ring', sink, group);
    this.c = new Int32Array(ring.control);
    this.f32 = new Float32Array(ring.memory.buffer);
    this.reduce = simdReducer(ring.memory);
  }

  override readonly copiesInput = true;
  override readonly partedOps: readonly CollectiveOp[] = ['allReduce', 'broadcast', 'reduceScatter', 'allGather'];

  protected execute(call: CollectiveCall, x: HostTensor, sink?: ResultSink): Promise<Omit<Executed, 'call'>> {
    return this.inOrder(async () => {
      if (call.op === 'allToAll') return this.moveAllToAll(call, x, sink);
      const { phases, mark } = phaseClock();
      this.agree(call);
      mark('sync');
      const out = this.move(call, x, mark, sink);
      return { out, phases, sentBytes: ringSentBytes(call, this.size, this.rank) };
    });
  }

  /** Runs `f` once the call before has settled (however it ended). */
  private inOrder<T>(f: () => Promise<T>): Promise<T> {
    const run = this.last.then(f);
    this.last = run.catch(() => undefined);
    return run;
  }

  /**
   * A collective whose input arrives in parts: part 0 awaited, one arrival and fingerprint check,
   * then each part through the ring as a collective of its own (its own stage, reduce-scatter
   * steps and gather into `sink`), awaiting the next part only after this one's result has been
   * handed on. An all-reduce's or broadcast's part is a flat range of its elements (moveFlat); a
   * reduce-scatter's or all-gather's the same range of every slice block (moveSliced). Parts
   * occupy disjoint ranges of the slots, so a rank may stage part k + 1 while others still gather
   * part k.
   */
  protected override executeParted(
    call: CollectiveCall,
    x: PartedInput,
    sink: ResultSink,
  ): Promise<Omit<Executed, 'call'>> {
    return this.inOrder(() => this.moveParted(call, x, sink));
  }

  private async moveParted(call: CollectiveCall, x: PartedInput, sink: ResultSink): Promise<Omit<Executed, 'call'>> {
    const { phases, mark } = phaseClock();
    const sliced = call.op === 'reduceScatter' || call.op === 'allGather';
    const n = numel(call.shape) * (call.op === 'allGather' ? this.size : 1);
    const block = sliced ? sliceBlock(call.op, call.shape, call.dim!, this.size) : undefined;
    for (let k = 0; k < x.bounds.length; k++) {
      const [lo, hi] = x.bounds[k];
      const data = await x.part(k);
      mark('readback');
      if (k === 0) {
        this.agree(call);
        this.checkCapacity(call, n);
        mark('sync');
      }
      try {
        if (block) this.moveSliced(call, block, lo, hi, data, mark, sink);
        else this.moveFlat(call, n, lo, hi, data, mark, sink);
      } finally {
        x.release(k);
      }
    }
    return { phases, sentBytes: ringSentBytes(call, this.size, this.rank) };
  }

  /**
   * An all-to-all (waiting as reachFor does): fingerprints and splits published and compared
   * (agreeAsync), the whole input staged into this rank's slot, then, once rank q has staged its
   * own, rows [off(send_q)[r], + recv[r]) read straight from q's slot into result rows
   * [off(recv)[q], + recv[q]), q = r, r + 1, … (mod t) — one copy in, one copy out, as an
   * all-gather. Rank q's send splits are read from the control block.
   */
  private async moveAllToAll(call: CollectiveCall, x: HostTensor, sink?: ResultSink): Promise<Omit<Executed, 'call'>> {
    const { phases, mark } = phaseClock();
    const { rank: r, size: t } = this;
    const recv = call.splits!.recv;
    const row = rowElems(call.shape);
    this.checkCapacity(call, x.data.length);
    await this.agreeAsync(call);
    mark('sync');
    const base = this.step;
    this.outCopies(() => this.slotRange(r, 0, x.data.length).set(x.data));
    this.advance();
    mark('stage');
    const peers = [...Array(t).keys()].map((k) => (r + k) % t);
    const deadline = performance.now() + this.timeoutMs;
    for (const q of peers)
      if (!(await this.reachFor(ctrl.progress(q), base + 1, deadline, call)))
        throw new CollectiveTimeoutError(r, call, [q], this.timeoutMs, 'transfer', this.group);
    mark('transport');
    const shape = outputShape(call, t);
    const result = sink ? undefined : new Float32Array(numel(shape));
    const put: ResultSink = sink ?? ((d, at) => result!.set(d, at));
    const into = offsets(recv);
    for (const q of peers) {
      const from = offsets(readSplits(this.c, ctrl.splits(call.seq, q), t).send)[r]!;
      put(this.slotRange(q, from * row, recv[q]! * row), into[q]! * row);
    }
    mark('gather');
    return { out: result && hostTensor(shape, result), phases, sentBytes: allToAllSentBytes(call, r) };
  }

  /**
   * As reach(), but blocking in Atomics.wait unless the communicator was built with waits 'yield'
   * (a blocked worker wakes on the peer's notify at once, an awaiting one only once its event
   * loop gets to it).
   */
  private async reachFor(idx: number, target: number, deadline: number, call: CollectiveCall): Promise<boolean> {
    return this.waits === 'yield'
      ? this.reach(idx, target, deadline, call)
      : this.blockUntil(call, idx, target, deadline);
  }

  /** Rank q's call at `seq` as its fingerprint (and an all-to-all's splits) in the control block say. */
  private readCall(seq: number, q: number): CollectiveCall {
    const call = readFingerprint(this.c, ctrl.fp(seq, q));
    return call.op === 'allToAll' ? { ...call, splits: readSplits(this.c, ctrl.splits(seq, q), this.size) } : call;
  }

  /** As agree(), waiting as reachFor does; the calls compared with their splits (callsAgree). */
  private async agreeAsync(call: CollectiveCall): Promise<void> {
    const { rank: r, size: t, c } = this;
    writeFingerprint(c, ctrl.fp(call.seq, r), call);
    writeSplits(c, ctrl.splits(call.seq, r), call.splits!);
    Atomics.store(c, ctrl.arrive(r), call.seq);
    Atomics.notify(c, ctrl.arrive(r));
    const deadline = performance.now() + this.timeoutMs;
    for (let q = 0; q < t; q++)
      if (!(await this.reachFor(ctrl.arrive(q), call.seq, deadline, call))) {
        const missing = [...Array(t).keys()].filter((p) => Atomics.load(c, ctrl.arrive(p)) < call.seq);
        throw new CollectiveTimeoutError(r, call, missing, this.timeoutMs, 'arrival', this.group);
      }
    const calls = [...Array(t).keys()].map((q) => this.readCall(call.seq, q));
    if (!callsAgree(calls)) throw new CollectiveMismatchError(r, calls, this.group);
  }

  /** Throws unless `n` elements fit one slot; returns n. */
  private checkCapacity(call: CollectiveCall, n: number): number {
    if (n * 4 > this.ring.capacityBytes) {
      throw new Error(
        `rank ${this.rank}: ${formatCall(call)} moves ${n * 4} bytes, more than the shared ring's ${this.ring.capacityBytes} bytes per rank; build the pool with a larger commCapacityBytes.`,
      );
    }
    return n;
  }

  /** Elements [lo, lo + len) of rank q's slot. */
  private slotRange(q: number, lo: number, len: number): Float32Array {
    const at = q * (this.ring.capacityBytes / 4) + lo;
    return this.f32.subarray(at, at + len);
  }

  /**
   * An all-reduce or broadcast of elements [lo, hi) of an n-element tensor (`data` holds them):
   * stage → reduce-scatter → gather over that range of every slot, the ring's chunk c of the
   * range being [lo + chunkBounds(hi − lo, t, c)). See move() for the schedule.
   */
  private moveFlat(
    call: CollectiveCall,
    n: number,
    lo: number,
    hi: number,
    data: Float32Array,
    mark: (name: string) => void,
    put: ResultSink,
  ): void {
    const { rank: r, size: t } = this;
    const m = hi - lo;
    if (data.length !== m || hi > n)
      throw new Error(`rank ${r}: part [${lo}, ${hi}) of ${n} got ${data.length} values.`);
    const { prev } = ringNeighbours(r, t);
    const words = this.ring.capacityBytes / 4;
    const own = this.slotRange(r, lo, m);
    const base = this.step;
    const reduce = call.op === 'allReduce';
    if (reduce)
      this.outCopies(() => own.subarray(...chunkBounds(m, t, prev)).set(data.subarray(...chunkBounds(m, t, prev))));
    else if (r === call.root) this.outCopies(() => own.set(data));
    this.advance();
    mark('stage');
    if (reduce) {
      for (let k = 0; k < t - 1; k++) {
        this.waitFor(call, prev, base + 1 + k);
        const [clo, chi] = chunkBounds(m, t, rsRecvChunk(r, k, t));
        for (let a = clo; a < chi; a += pieceElems) {
          const b = Math.min(chi, a + pieceElems);
          this.outCopies(() => own.subarray(a, b).set(data.subarray(a, b)));
          this.reduce(call.reduceOp!, (r * words + lo + a) * 4, (prev * words + lo + a) * 4, b - a);
        }
        this.advance();
      }
    }
    mark('transport');
    // Rank q has staged (and, for all-reduce, reduced) its range once its progress reaches `ready`.
    const ready = base + (reduce ? t : 1);
    const from = (q: number): Float32Array => (this.waitFor(call, q, ready), this.slotRange(q, lo, m));
    if (!reduce) put(from(call.root!), lo);
    else
      for (let k = 0; k < t; k++) {
        const c = (r + k) % t;
        const [clo, chi] = chunkBounds(m, t, c);
        put(from(c).subarray(clo, chi), lo + clo);
      }
    mark('gather');
  }

  /**
   * Part [lo, hi) of every slice block of a reduce-scatter or all-gather (slice-parts.ts): rank
   * q's slot holds slice j's block at [j·A·M, (j + 1)·A·M), so the part is the range
   * [j·A·M + lo, j·A·M + hi) of each. A reduce-scatter stages its [rows, t, width] data into
   * those t ranges, reduces range c at the step that reduces chunk c (as move() does for whole
   * chunks) and hands on its own slice's range; an all-gather stages its data into its own
   * slice's range and reads every rank's, each row of it to where it lands in the [A, t, M] result.
   */
  private moveSliced(
    call: CollectiveCall,
    { a, m }: SliceBlock,
    lo: number,
    hi: number,
    data: Float32Array,
    mark: (name: string) => void,
    put: ResultSink,
  ): void {
    const { rank: r, size: t } = this;
    const len = hi - lo;
    const reduce = call.op === 'reduceScatter';
    if (data.length !== (reduce ? t * len : len) || hi > a * m)
      throw new Error(`rank ${r}: part [${lo}, ${hi}) of ${formatCall(call)} got ${data.length} values.`);
    const { rows, width } = partShape(lo, hi, m);
    const { prev } = ringNeighbours(r, t);
    const words = this.ring.capacityBytes / 4;
    const blockLen = a * m;
    const own = this.slotRange(r, 0, t * blockLen);
    const base = this.step;
    if (reduce)
      this.outCopies(() => {
        for (let i = 0; i < rows; i++)
          for (let j = 0; j < t; j++)
            own.set(data.subarray((i * t + j) * width, (i * t + j + 1) * width), j * blockLen + lo + i * width);
      });
    else this.outCopies(() => own.set(data, r * blockLen + lo));
    this.advance();
    mark('stage');
    if (reduce)
      for (let k = 0; k < t - 1; k++) {
        this.waitFor(call, prev, base + 1 + k);
        const at = rsRecvChunk(r, k, t) * blockLen + lo;
        this.reduce(call.reduceOp!, (r * words + at) * 4, (prev * words + at) * 4, len);
        this.advance();
      }
    mark('transport');
    if (reduce) put(own.subarray(r * blockLen + lo, r * blockLen + hi), lo);
    else {
      const row = Math.floor(lo / m);
      const col = lo % m;
      for (let k = 0; k < t; k++) {
        const j = (r + k) % t;
        this.waitFor(call, j, base + 1);
        const src = this.slotRange(j, j * blockLen + lo, len);
        for (let i = 0; i < rows; i++) put(src.subarray(i * width, (i + 1) * width), (row + i) * t * m + j * m + col);
      }
    }
    mark('gather');
  }

  /**
   * One ring step: stage the tensor into this rank's slot, publish progress, read rank r − 1's
   * slot once its progress says it is staged (n elements each; rank r + 1 reads this slot).
   */
  private moveExchange(
    call: CollectiveCall,
    n: number,
    x: HostTensor,
    mark: (name: string) => void,
    sink: ResultSink | undefined,
  ): HostTensor | undefined {
    const { prev } = ringNeighbours(this.rank, this.size);
    const base = this.step;
    this.outCopies(() => this.slotRange(this.rank, 0, n).set(x.data));
    this.advance();
    mark('stage');
    this.waitFor(call, prev, base + 1);
    const got = this.slotRange(prev, 0, n);
    mark('transport');
    const result = sink ? undefined : got.slice();
    sink?.(got, 0);
    mark('gather');
    return result && hostTensor(call.shape, result);
  }

  /** Throws once the ring is aborted: code r + 1 blames rank r (its global rank in a mesh), −1 the pool. */
  private checkAbort(call: CollectiveCall | undefined): void {
    const code = Atomics.load(this.c, ctrl.abort);
    if (code === 0) return;
    const detail = sabAbortReason(this.ring.control);
    const who = code > 0 && this.group ? rankName(this.group.mesh, code - 1) : `rank ${code - 1}`;
    const why = (code > 0 ? `${who} failed` : 'the pool was aborted') + (detail ? `: ${detail}` : '');
    this.fail(why);
    throw new CollectiveAbortedError(this.rank, call, why, this.group);
  }

  /**
   * Point-to-point buffer of the ordered pair (from, to), its first n elements: one message at a
   * time, the sender writing message k only once the receiver has taken message k − 1.
   */
  private p2pRange(from: number, to: number, n: number): Float32Array {
    const at = (this.size * this.ring.capacityBytes + (from * this.size + to) * this.ring.p2pCapacityBytes) / 4;
    return this.f32.subarray(at, at + n);
  }

  /**
   * Resolves true once word `idx` ≥ target, false at `deadline`; never blocks the thread (a batch's
   * other ops go on). An abort names `call` (absent: a point-to-point message).
   */
  private async reach(idx: number, target: number, deadline: number, call?: CollectiveCall): Promise<boolean> {
    for (;;) {
      const v = Atomics.load(this.c, idx);
      if (v >= target) return true;
      this.checkAbort(call);
      const left = deadline - performance.now();
      if (left <= 0) return false;
      await changed(this.c, idx, v, Math.min(left, 50));
    }
  }

  /** Waits until the peer has taken the message before, then writes this one into the pair's buffer. */
  protected async p2pSend(call: P2PCall, data: Float32Array): Promise<void> {
    const { from, to } = call;
    if (data.length * 4 > this.ring.p2pCapacityBytes)
      throw new Error(
        `rank ${this.rank}: send(${formatP2P(call)}) moves ${data.length * 4} bytes, more than the shared ring's ${this.ring.p2pCapacityBytes} bytes per point-to-point message; build the pool with a larger p2pCapacityBytes.`,
      );
    if (!(await this.reach(ctrl.p2pTaken(from, to), call.seq - 1, performance.now() + this.timeoutMs)))
      throw new P2PTimeoutError({ ...call, seq: call.seq - 1 }, 'send', this.timeoutMs, this.group);
    this.p2pRange(from, to, data.length).set(data);
    writeP2PFingerprint(this.c, ctrl.p2pFp(from, to), call);
    Atomics.store(this.c, ctrl.p2pSent(from, to), call.seq);
    Atomics.notify(this.c, ctrl.p2pSent(from, to));
  }

  /** Waits for the message, copies it out and marks it taken (the sender may then write the next). */
  protected async p2pRecv(expect: P2PCall): Promise<{ call: P2PCall; data: Float32Array }> {
    const { from, to } = expect;
    if (!(await this.reach(ctrl.p2pSent(from, to), expect.seq, performance.now() + this.timeoutMs)))
      throw new P2PTimeoutError(expect, 'recv', this.timeoutMs, this.group);
    const got = readP2PFingerprint(this.c, ctrl.p2pFp(from, to));
    const data = this.p2pRange(from, to, numel(got.shape)).slice();
    Atomics.store(this.c, ctrl.p2pTaken(from, to), expect.seq);
    Atomics.notify(this.c, ctrl.p2pTaken(from, to));
    // A name longer than the fingerprint's slot comes back cut: compare it with this rank's, cut the same way.
    return { call: sameP2P(got, storedP2P(expect)) ? expect : got, data };
  }

  /** Blocks until word `idx` ≥ target; throws `onTimeout()` after timeoutMs or on abort. */
  private waitAtLeast(
    call: CollectiveCall,
    idx: number,
    target: number,
    deadline: number,
    onTimeout: () => Error,
  ): void {
    if (!this.blockUntil(call, idx, target, deadline)) throw onTimeout();
  }

  /** Blocks until word `idx` ≥ target (true) or `deadline` (false); throws on abort. */
  private blockUntil(call: CollectiveCall, idx: number, target: number, deadline: number): boolean {
    for (;;) {
      const v = Atomics.load(this.c, idx);
      if (v >= target) return true;
      this.checkAbort(call);
      const left = deadline - performance.now();
      if (left <= 0) return false;
      Atomics.wait(this.c, idx, v, Math.min(left, 250));
    }
  }

  /** Publishes this rank's fingerprint, waits for every rank's, and compares them. */
  private agree(call: CollectiveCall): void {
    const { rank: r, size: t, c } = this;
    writeFingerprint(c, ctrl.fp(call.seq, r), call);
    Atomics.store(c, ctrl.arrive(r), call.seq);
    Atomics.notify(c, ctrl.arrive(r));
    const deadline = performance.now() + this.timeoutMs;
    for (let q = 0; q < t; q++) {
      this.waitAtLeast(call, ctrl.arrive(q), call.seq, deadline, () => {
        const missing = [...Array(t).keys()].filter((p) => Atomics.load(c, ctrl.arrive(p)) < call.seq);
        return new CollectiveTimeoutError(r, call, missing, this.timeoutMs, 'arrival', this.group);
      });
    }
    // Against its own fingerprint as stored (a name longer than the slot is compared on its prefix),
    // word for word; the calls are decoded only to name a mismatch.
    for (let q = 0; q < t; q++)
      if (!sameFingerprint(c, ctrl.fp(call.seq, q), ctrl.fp(call.seq, r))) {
        const calls = [...Array(t).keys()].map((p) => this.readCall(call.seq, p));
        throw new CollectiveMismatchError(r, calls, this.group);
      }
  }

  private advance(to = this.step + 1): void {
    this.step = to;
    Atomics.store(this.c, ctrl.progress(this.rank), to);
    Atomics.notify(this.c, ctrl.progress(this.rank));
  }

  private waitFor(call: CollectiveCall, q: number, target: number): void {
    this.waitAtLeast(
      call,
      ctrl.progress(q),
      target,
      performance.now() + this.timeoutMs,
      () => new CollectiveTimeoutError(this.rank, call, [q], this.timeoutMs, 'transfer', this.group),
    );
  }

  /**
   * Stage → ring reduce-scatter → gather. Staging copies the input into this rank's slot; the
   * reduce-scatter adds in place (t−1 steps, rank r reading rank r−1's slot), leaving the full
   * reduction of chunk c in slot c. An all-reduce (moveFlat) stages only chunk r−1 (the one rank
   * r+1 reads first, as it is) up front; each other chunk is copied in at the step that reduces
   * it, piece by piece, each piece added to while it is still in cache. The result is then read
   * straight from the slots that hold its pieces into `sink` (the caller's array or the GPU
   * upload; else a new array): an all-gather reads each rank's staged slice, a broadcast the
   * root's slot. No rank relays data it does not reduce, and nothing is copied twice.
   * A slot is overwritten only after the next call's arrival, i.e. once every rank has read it.
   */
  private move(
    call: CollectiveCall,
    x: HostTensor,
    mark: (name: string) => void,
    sink: ResultSink | undefined,
  ): HostTensor | undefined {
    const { rank: r, size: t } = this;
    const shape = outputShape(call, t);
    if (call.op === 'barrier') return (mark('transport'), x);
    const n = this.checkCapacity(call, call.op === 'allGather' ? numel(shape) : numel(call.shape));
    if (call.op === 'ringExchange') return this.moveExchange(call, n, x, mark, sink);
    if (call.op === 'allReduce' || call.op === 'broadcast') {
      const result = sink ? undefined : new Float32Array(n);
      this.moveFlat(call, n, 0, n, x.data, mark, sink ?? ((d, at) => result!.set(d, at)));
      return result && hostTensor(shape, result);
    }
    const { prev } = ringNeighbours(r, t);
    const words = this.ring.capacityBytes / 4;
    const slot = (q: number): Float32Array => this.slotRange(q, 0, n);
    const chunk = (buf: Float32Array, k: number): Float32Array => buf.subarray(...chunkBounds(n, t, k));
    const own = slot(r);
    const base = this.step;
    if (call.op === 'allGather') this.outCopies(() => chunk(own, r).set(x.data));
    else this.outCopies(() => packSlices(x.data, x.shape, call.dim!, t, own));
    this.advance();
    mark('stage');
    if (call.op === 'reduceScatter') {
      for (let k = 0; k < t - 1; k++) {
        this.waitFor(call, prev, base + 1 + k);
        const [lo, hi] = chunkBounds(n, t, rsRecvChunk(r, k, t));
        this.reduce(call.reduceOp!, (r * words + lo) * 4, (prev * words + lo) * 4, hi - lo);
        this.advance();
      }
    }
    mark('transport');
    const result = sink ? undefined : new Float32Array(numel(shape));
    const put: ResultSink = sink ?? ((d, at) => result!.set(d, at));
    // Rank q has staged (and, for a reduce-scatter, reduced) its slot once its progress reaches `ready`.
    const ready = base + (call.op === 'reduceScatter' ? t : 1);
    const from = (q: number): Float32Array => (this.waitFor(call, q, ready), slot(q));
    if (call.op === 'reduceScatter') put(chunk(own, r), 0);
    else gatherSlices(shape, call.dim!, t, (c) => chunk(from(c), c), put);
    mark('gather');
    return result && hostTensor(shape, result);
  }
}
