import type { Collectives, ReduceOp } from '../comm/collectives.ts';
import type { MappingPair } from './mappings.ts';
import type { OpPhase } from './plan-types.ts';

/** A collective as the layer issued it: its op name in the trace and plan, and why. */
export interface NamedCollective {
  readonly name: string;
  readonly phase: OpPhase;
  /** The Megatron mapping, or what a plain all-reduce is for ("finalize_model_grads: …"). */
  readonly mapping: string;
  readonly inShape: readonly number[];
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
  ) {}

  private async issued(x: T, result: Promise<T>): Promise<T> {
    const y = await result;
    if (y !== x) this.adopt?.(y);
    return y;
  }

  // Synchronous unless the hook returns a promise, so a recorder sees calls in program order.
  private note(name: string, mapping: string, x: T): void | Promise<void> {
    const c = { name, phase: this.phase, mapping, inShape: this.shapeOf(x) };
    this.log.push(c);
    return this.onCall?.(c);
  }

  /** The forward half of a mapping pair (nothing to do for one rank, as in Megatron). */
  async forward(name: string, m: MappingPair, x: T): Promise<T> {
    if (this.comm.size === 1) return x;
    const ready = this.note(name, `${m.name} — ${m.summary}`, x);
    if (ready) await ready;
    return this.issued(x, m.forward(this.comm, x, name));
  }

  /** The backward half of a mapping pair. */
  async backward(name: string, m: MappingPair, dy: T): Promise<T> {
    if (this.comm.size === 1) return dy;
    const ready = this.note(name, `${m.name} (backward) — ${m.summary}`, dy);
    if (ready) await ready;
    return this.issued(dy, m.backward(this.comm, dy, name));
  }

  /** A plain all-reduce with its purpose (vocab-parallel loss pieces, replicated weight gradients). */
  async allReduce(name: string, why: string, x: T, op: ReduceOp = 'sum'): Promise<T> {
    if (this.comm.size === 1) return x;
    const ready = this.note(name, why, x);
    if (ready) await ready;
    return this.issued(x, this.comm.allReduce(x, op, name));
  }

  /** A plain all-gather along `dim` with its purpose. */
  async allGather(name: string, why: string, x: T, dim: number): Promise<T> {
    if (this.comm.size === 1) return x;
    const ready = this.note(name, why, x);
    if (ready) await ready;
    return this.issued(x, this.comm.allGather(x, dim, name));
  }
}
