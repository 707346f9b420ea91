import type { Collectives, ReduceOp } from '../comm/collectives.ts';
import { opSpec, type OpSpec } from './backend.ts';
import type { MappingPair } from './mappings.ts';
import type { OpPhase, OpRole, OpSplit } from './plan-types.ts';
import type { TpChunk } from './tp-overlap.ts';
import type { WeightName } from './weight-names.ts';

/** A collective as the layer issued it: its label in the trace and plan, why, and what it is. */
export interface NamedCollective {
  readonly name: string;
  readonly phase: OpPhase;
  /** The Megatron mapping, or what a plain all-reduce is for ("finalize_model_grads: …"). */
  readonly mapping: string;
  readonly inShape: readonly number[];
  /** The split of the tensor it reads (row: partial sums of a RowParallelLinear, sequence: SP shards, …). */
  readonly split: OpSplit;
  readonly role: OpRole;
  readonly weight?: WeightName;
  /** Issued asynchronously and waited on after the weight gradients (Megatron's async dgrad all-reduce). */
  readonly async: boolean;
  /** Under chunked TP overlap: which chunk of the cut collective it moves (tp-overlap.ts). */
  readonly chunk?: TpChunk;
}

/**
 * The communicator as the layer uses it: every collective is named (the same name in the trace,
 * the plan and the timeline) and goes through a Megatron mapping pair or a plain all-reduce.
 * The identity halves (f forward, g backward) are not called: they issue nothing.
 */
export class LayerComm<T> {
  readonly log: NamedCollective[] = [];
  phase: OpPhase = 'forward';

  constructor(
    readonly comm: Collectives<T>,
    private readonly shapeOf: (t: T) => readonly number[],
    /** Called before every collective is issued (the GPU waits for its queued kernels here). */
    private readonly onCall?: (c: NamedCollective) => void | Promise<void>,
    /** Called with every new tensor a collective returns (so the caller can free it later). */
    private readonly adopt?: (t: T) => void,
    /**
     * Starts the compute queued so far without waiting for it (the GPU's queue submit), so that it
     * runs under a chunked collective in flight (tp-overlap.ts); absent where compute runs at once.
     */
    readonly launch: () => void = () => {},
  ) {}

  /** The layer's communication stream: collectives issued through it start in issue order, each once the previous has finished. */
  readonly stream = new CommStream();

  /** Also told of every new tensor a collective returns (a pipeline stage's memory record, stage-memory.ts). */
  onResult: ((t: T) => void) | undefined;

  private async issued(x: T, result: Promise<T>): Promise<T> {
    const y = await result;
    if (y !== x) {
      this.adopt?.(y);
      this.onResult?.(y);
    }
    return y;
  }

  // Synchronous unless the hook returns a promise, so a recorder sees calls in program order.
  private note(op: OpSpec, mapping: string, x: T): void | Promise<void> {
    const c: NamedCollective = {
      name: op.label,
      phase: this.phase,
      mapping,
      inShape: this.shapeOf(x),
      split: op.split,
      role: op.role ?? (this.phase === 'forward' ? 'forward' : 'dgrad'),
      ...(op.weight !== undefined && { weight: op.weight }),
      async: op.async ?? false,
      ...(op.chunk !== undefined && { chunk: op.chunk }),
    };
    this.log.push(c);
    return this.onCall?.(c);
  }

  /** The forward half of a mapping pair (nothing to do for one rank, as in Megatron). */
  async forward(op: OpSpec, m: MappingPair, x: T): Promise<T> {
    if (this.comm.size === 1) return x;
    const ready = this.note(op, `${m.name} — ${m.summary}`, x);
    if (ready) await ready;
    return this.issued(x, m.forward(this.comm, x, op.label));
  }

  /** The backward half of a mapping pair. */
  async backward(op: OpSpec, m: MappingPair, dy: T): Promise<T> {
    if (this.comm.size === 1) return dy;
    const ready = this.note(op, `${m.name} (backward) — ${m.summary}`, dy);
    if (ready) await ready;
    return this.issued(dy, m.backward(this.comm, dy, op.label));
  }

  /** A plain all-reduce with its purpose (vocab-parallel loss pieces, replicated weight gradients). */
  async allReduce(op: OpSpec, why: string, x: T, reduce: ReduceOp = 'sum'): Promise<T> {
    if (this.comm.size === 1) return x;
    const ready = this.note(op, why, x);
    if (ready) await ready;
    return this.issued(x, this.comm.allReduce(x, reduce, op.label));
  }

  /**
   * One ring step with its purpose (a step of a chunked all-gather, tp-overlap.ts): sends x to rank
   * r + 1 and returns the same-shape tensor rank r − 1 sent.
   */
  async exchange(op: OpSpec, why: string, x: T): Promise<T> {
    if (this.comm.size === 1) return x;
    const ready = this.note(op, why, x);
    if (ready) await ready;
    return this.issued(x, this.comm.ringExchange(x, op.label));
  }

  /** A plain all-gather along `dim` with its purpose. */
  async allGather(op: OpSpec, why: string, x: T, dim: number): Promise<T> {
    if (this.comm.size === 1) return x;
    const ready = this.note(op, why, x);
    if (ready) await ready;
    return this.issued(x, this.comm.allGather(x, dim, op.label));
  }
}

/**
 * Under SP a ColumnParallelLinear saves its [s/t, b, h] input and all-gathers it again for the
 * wgrad: `issue` starts that all-gather asynchronously right before the dgrad GEMMs, `wait` takes
 * its result after them (LinearWithGradAccumulationAndAsyncCommunication.backward,
 * megatron/core/tensor_parallel/layers.py: "gather is scheduled before the input gradient computation").
 */
export function regather<T>(
  lc: LayerComm<T>,
  label: string,
  enter: MappingPair,
  shard: T,
): { issue: () => void; wait: () => Promise<T> } {
  let pending: Promise<T> | undefined;
  return {
    issue: () => {
      pending = lc.forward(opSpec(label, 'sequence', { async: true, role: 'forward' }), enter, shard);
    },
    wait: () => {
      if (!pending) throw new Error(`regather: ${label} was awaited before it was issued.`);
      return pending;
    },
  };
}

/**
 * A communication stream: collectives issued on it run one after another in issue order (every
 * rank issues the same sequence), the first at once when the stream is idle, so the caller can
 * issue chunk after chunk and go on queueing compute while they move.
 */
export class CommStream {
  private tail: Promise<unknown> = Promise.resolve();
  private inFlight = 0;

  /** Runs `start` once every collective issued before it has finished; resolves with its result. */
  issue<R>(start: () => Promise<R>): Promise<R> {
    const p = this.inFlight === 0 ? start() : this.tail.then(start);
    this.inFlight++;
    const done = p.finally(() => this.inFlight--);
    this.tail = done.catch(() => {});
    return p;
  }
}
