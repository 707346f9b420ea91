import { sharedNow } from '../core/clock.ts';
import { discardTrace, type TraceSink } from '../core/trace-recorder.ts';
import { BaseCollectives, type Executed } from './base.ts';
import { callsAgree, type CollectiveCall } from './call.ts';
import { CollectiveAbortedError, CollectiveMismatchError, CollectiveTimeoutError } from './errors.ts';
import type { HostTensor } from './host-tensor.ts';
import { referenceCollective } from './reference.ts';
import { ringSentBytes } from './ring-schedule.ts';
import type { GroupView } from '../mesh/process-group.ts';
import { P2PTimeoutError, type P2PCall } from './p2p.ts';

/** A point-to-point message parked until its receiver asks, or a receiver waiting for one. */
type Parked =
  | { readonly sent: { readonly call: P2PCall; readonly data: Float32Array } }
  | { readonly waiting: (m: { call: P2PCall; data: Float32Array }) => void };

interface Arrival {
  readonly call: CollectiveCall;
  readonly x: HostTensor;
  readonly resolve: (y: HostTensor) => void;
  readonly reject: (e: Error) => void;
}

/** Meeting point of t ranks in one thread: waits for all t arrivals of a seq, then applies the reference. */
class Hub {
  private slots = new Map<number, { arrivals: (Arrival | undefined)[]; timer: ReturnType<typeof setTimeout> }>();
  private timedOut = new Map<number, number[]>();
  /** Point-to-point messages by "from>to#seq". */
  private parked = new Map<string, Parked>();

  constructor(
    private readonly size: number,
    private readonly timeoutMs: number,
    private readonly group: GroupView | undefined,
  ) {}

  /** Parks a copy of a message for its receiver (or hands it to the one waiting); a send never waits. */
  post(call: P2PCall, data: Float32Array): void {
    const key = `${call.from}>${call.to}#${call.seq}`;
    const m = { call, data: data.slice() };
    const p = this.parked.get(key);
    if (p && 'waiting' in p) {
      this.parked.delete(key);
      p.waiting(m);
    } else this.parked.set(key, { sent: m });
  }

  /** The message `expect` numbers, once sent; fails after the timeout naming the sender. */
  take(expect: P2PCall): Promise<{ call: P2PCall; data: Float32Array }> {
    const key = `${expect.from}>${expect.to}#${expect.seq}`;
    const p = this.parked.get(key);
    if (p && 'sent' in p) {
      this.parked.delete(key);
      return Promise.resolve(p.sent);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.parked.delete(key);
        reject(new P2PTimeoutError(expect, 'recv', this.timeoutMs, this.group));
      }, this.timeoutMs);
      this.parked.set(key, { waiting: (m) => (clearTimeout(timer), resolve(m)) });
    });
  }

  arrive(rank: number, call: CollectiveCall, x: HostTensor): Promise<HostTensor> {
    return new Promise((resolve, reject) => {
      const missing = this.timedOut.get(call.seq);
      if (missing) {
        reject(
          new CollectiveAbortedError(
            rank,
            call,
            `the other ranks timed out waiting for ${missing.length === 1 ? 'rank' : 'ranks'} ${missing.join(', ')}`,
            this.group,
          ),
        );
        return;
      }
      let slot = this.slots.get(call.seq);
      if (!slot) {
        slot = {
          arrivals: new Array(this.size).fill(undefined),
          timer: setTimeout(() => this.expire(call.seq), this.timeoutMs),
        };
        this.slots.set(call.seq, slot);
      }
      slot.arrivals[rank] = { call, x, resolve, reject };
      if (slot.arrivals.every((a) => a)) this.complete(call.seq, slot.arrivals as Arrival[]);
    });
  }

  private complete(seq: number, arrivals: Arrival[]): void {
    clearTimeout(this.slots.get(seq)!.timer);
    this.slots.delete(seq);
    const calls = arrivals.map((a) => a.call);
    if (!callsAgree(calls)) {
      arrivals.forEach((a, r) => a.reject(new CollectiveMismatchError(r, calls, this.group)));
      return;
    }
    const outs = referenceCollective(
      calls[0],
      arrivals.map((a) => a.x),
      calls,
    );
    arrivals.forEach((a, r) => a.resolve(outs[r]));
  }

  private expire(seq: number): void {
    const slot = this.slots.get(seq)!;
    this.slots.delete(seq);
    const missing = slot.arrivals.flatMap((a, r) => (a ? [] : [r]));
    this.timedOut.set(seq, missing);
    slot.arrivals.forEach((a, r) =>
      a?.reject(new CollectiveTimeoutError(r, a.call, missing, this.timeoutMs, 'arrival', this.group)),
    );
  }
}

/** One rank's view of an in-process group (all ranks share one Hub in one thread). */
class InProcessCollectives extends BaseCollectives {
  constructor(
    rank: number,
    size: number,
    sink: TraceSink,
    private readonly hub: Hub,
    group: GroupView | undefined,
  ) {
    super(rank, size, 'in-process', sink, group);
  }

  protected async p2pSend(call: P2PCall, data: Float32Array): Promise<void> {
    this.hub.post(call, data);
  }

  protected p2pRecv(expect: P2PCall): Promise<{ call: P2PCall; data: Float32Array }> {
    return this.hub.take(expect);
  }

  protected async execute(call: CollectiveCall, x: HostTensor): Promise<Omit<Executed, 'call'>> {
    const t0 = sharedNow();
    const out = await this.hub.arrive(this.rank, call, x);
    return {
      out,
      phases: [{ name: 'transport', t0, t1: sharedNow() }],
      sentBytes: ringSentBytes(call, this.size, this.rank),
    };
  }
}

/** Options of an in-process group. */
export interface InProcessOptions {
  /** A call fails when some rank has not arrived this long after the first (default 10 000 ms). */
  readonly timeoutMs?: number;
  /** Per-rank trace sinks (default: discard). */
  readonly sinks?: readonly TraceSink[];
  /** The mesh group these ranks form (their errors then name it and each rank's coordinates). */
  readonly group?: GroupView;
}

/** t communicators (index = rank) that meet in this thread; the reference semantics for tests. */
export function createInProcessGroup(size: number, opts: InProcessOptions = {}): BaseCollectives[] {
  if (!Number.isInteger(size) || size < 1)
    throw new Error(`createInProcessGroup: size ${size} must be a positive integer.`);
  if (opts.group && opts.group.members.length !== size)
    throw new Error(`createInProcessGroup: size ${size} but the group has ${opts.group.members.length} members.`);
  const hub = new Hub(size, opts.timeoutMs ?? 10_000, opts.group);
  return Array.from(
    { length: size },
    (_, r) => new InProcessCollectives(r, size, opts.sinks?.[r] ?? discardTrace, hub, opts.group),
  );
}
