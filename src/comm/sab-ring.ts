import { numel } from '../kernels/limits.ts';
import { phaseClock } from '../trace/clock.ts';
import type { TraceSink } from '../trace/recorder.ts';
import { BaseCollectives, type Executed } from './base.ts';
import { formatCall, outputShape, sameCall, type CollectiveCall } from './call.ts';
import { CollectiveAbortedError, CollectiveMismatchError, CollectiveTimeoutError } from './errors.ts';
import { hostTensor, type HostTensor } from './host-tensor.ts';
import { chunkBounds, packSlices, unpackSlices } from './layout.ts';
import { agRecvChunk, ringNeighbours, rsRecvChunk, ringSentBytes } from './ring-schedule.ts';
import { simdReducer, type ReduceKernel } from './simd-reduce.ts';
import { ctrl, readFingerprint, sabAbortReason, writeFingerprint, type SabRing } from './sab-layout.ts';

/** Broadcast pipelines the chain in chunks of about this many elements. */
const broadcastChunk = 1 << 16;

/**
 * Ring collectives in shared memory (workers only: blocks in Atomics.wait). Each rank's data buffer
 * is its ring slot; at every step rank r reads rank r−1's slot in place (reduce: add into its own
 * chunk; gather: copy), so a step moves exactly the chunk the ring model sends. progress[r] counts
 * finished steps; a step waits on progress[r−1] (data ready) and, when it overwrites a chunk rank
 * r+1 still reads, on progress[r+1].
 */
export class SabRingCollectives extends BaseCollectives {
  private readonly c: Int32Array;
  private readonly f32: Float32Array;
  private readonly reduce: ReduceKernel;
  private step = 0;

  constructor(
    rank: number,
    size: number,
    private readonly ring: SabRing,
    sink: TraceSink,
    private readonly timeoutMs: number,
  ) {
    super(rank, size, 'sab-ring', sink);
    this.c = new Int32Array(ring.control);
    this.f32 = new Float32Array(ring.memory.buffer);
    this.reduce = simdReducer(ring.memory);
  }

  protected async execute(call: CollectiveCall, x: HostTensor): Promise<Omit<Executed, 'call'>> {
    const { phases, mark } = phaseClock();
    this.agree(call);
    mark('sync');
    const out = this.move(call, x, mark);
    return { out, phases, sentBytes: ringSentBytes(call, this.size, this.rank) };
  }

  private checkAbort(call: CollectiveCall): void {
    const code = Atomics.load(this.c, ctrl.abort);
    if (code === 0) return;
    const detail = sabAbortReason(this.ring.control);
    const why = (code > 0 ? `rank ${code - 1} failed` : 'the pool was aborted') + (detail ? `: ${detail}` : '');
    this.fail(why);
    throw new CollectiveAbortedError(this.rank, call, why);
  }

  /** Blocks until word `idx` ≥ target; throws `onTimeout()` after timeoutMs or on abort. */
  private waitAtLeast(
    call: CollectiveCall,
    idx: number,
    target: number,
    deadline: number,
    onTimeout: () => Error,
  ): void {
    for (;;) {
      const v = Atomics.load(this.c, idx);
      if (v >= target) return;
      this.checkAbort(call);
      const left = deadline - performance.now();
      if (left <= 0) throw onTimeout();
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
        return new CollectiveTimeoutError(r, call, missing, this.timeoutMs, 'arrival');
      });
    }
    const calls = [...Array(t).keys()].map((q) => readFingerprint(c, ctrl.fp(call.seq, q)));
    // Against its own fingerprint as stored (a name longer than the slot is compared on its prefix).
    if (!calls.every((k) => sameCall(k, calls[r]))) throw new CollectiveMismatchError(r, calls);
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
      () => new CollectiveTimeoutError(this.rank, call, [q], this.timeoutMs, 'transfer'),
    );
  }

  private move(call: CollectiveCall, x: HostTensor, mark: (name: string) => void): HostTensor {
    const { rank: r, size: t } = this;
    const shape = outputShape(call, t);
    if (call.op === 'barrier') return (mark('transport'), x);
    const n = call.op === 'allGather' ? numel(shape) : numel(call.shape);
    if (n * 4 > this.ring.capacityBytes) {
      throw new Error(
        `rank ${r}: ${formatCall(call)} moves ${n * 4} bytes, more than the shared ring's ${this.ring.capacityBytes} bytes per rank; build the pool with a larger commCapacityBytes.`,
      );
    }
    const { prev, next } = ringNeighbours(r, t);
    const slot = this.ring.capacityBytes / 4;
    const own = this.f32.subarray(r * slot, r * slot + n);
    const from = this.f32.subarray(prev * slot, prev * slot + n);
    const chunk = (buf: Float32Array, k: number): Float32Array => buf.subarray(...chunkBounds(n, t, k));
    const base = this.step;
    if (call.op === 'allGather') chunk(own, r).set(x.data);
    else if (call.op === 'reduceScatter') packSlices(x.data, x.shape, call.dim!, t, own);
    else if (call.op === 'allReduce' || r === call.root) own.set(x.data);
    this.advance();
    mark('stage');
    if (call.op === 'allReduce' || call.op === 'reduceScatter') {
      for (let k = 0; k < t - 1; k++) {
        this.waitFor(call, prev, base + 1 + k);
        const [lo, hi] = chunkBounds(n, t, rsRecvChunk(r, k, t));
        this.reduce(call.reduceOp!, (r * slot + lo) * 4, (prev * slot + lo) * 4, hi - lo);
        this.advance();
      }
    }
    if (call.op === 'allReduce' || call.op === 'allGather') {
      const s0 = this.step - base;
      for (let k = 0; k < t - 1; k++) {
        this.waitFor(call, prev, base + s0 + k);
        // All-reduce: chunk agRecvChunk(r,k) of ours is what rank r+1 reads at its reduce-scatter step k.
        if (call.op === 'allReduce') this.waitFor(call, next, base + 2 + k);
        const c = agRecvChunk(r, k, t);
        chunk(own, c).set(chunk(from, c));
        this.advance();
      }
    }
    if (call.op === 'broadcast') {
      const m = Math.max(1, Math.ceil(n / broadcastChunk));
      if (r === call.root) this.advance(base + 1 + m);
      else {
        for (let j = 0; j < m; j++) {
          this.waitFor(call, prev, base + 2 + j);
          const [lo, hi] = chunkBounds(n, m, j);
          own.subarray(lo, hi).set(from.subarray(lo, hi));
          this.advance();
        }
      }
    }
    mark('transport');
    const out = new Float32Array(numel(shape));
    if (call.op === 'reduceScatter') out.set(chunk(own, r));
    else if (call.op === 'allGather') unpackSlices(own, shape, call.dim!, t, out);
    else out.set(own);
    mark('unstage');
    return hostTensor(shape, out);
  }
}
