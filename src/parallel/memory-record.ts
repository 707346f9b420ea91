import type { Collectives, ReduceOp } from '../comm/collectives.ts';
import { numel } from '../core/shape.ts';
import type { Backend, OpSpec } from './backend.ts';
import type { StepResult } from './layer.ts';
import type { NamedCollective } from './layer-comm.ts';
import type { OpPhase } from './plan-types.ts';
import type { WeightSet } from './weights.ts';

/**
 * What a rank's GPU buffer is for, by lifetime (seed 004 M107, docs/sources.md): weights (resident),
 * their gradients (the step), optimizer state (resident; the playground runs no optimizer, so none),
 * activations kept for backward (a forward's output that a backward op or collective reads), transient
 * workspace (everything else the step makes), communication staging (the GPU collectives' pooled
 * read-back and upload buffers).
 */
export type BufferClass = 'weights' | 'gradients' | 'optimizerState' | 'activations' | 'workspace' | 'staging';

/** Every buffer class, in stacking order (resident at the bottom). */
export const bufferClasses: readonly BufferClass[] = [
  'weights',
  'optimizerState',
  'gradients',
  'activations',
  'workspace',
  'staging',
];

/**
 * The op that made a buffer: an upload from the host, the plan op (its index and label) that first
 * used it, or none (made and never used by an op).
 */
export type BufferMaker =
  | { readonly kind: 'upload' }
  | { readonly kind: 'unused' }
  | { readonly kind: 'compute' | 'collective'; readonly opIndex: number; readonly label: string };

/**
 * One buffer of a rank's step, live over op positions [allocAt, freeAt): position p is "before
 * plan op p is issued", so a buffer made for op p and freed after it spans [p, p + 1); buffers
 * alive when the step ends have freeAt = ops (the plan's op count).
 */
export interface BufferRecord {
  readonly id: number;
  /** The tensor's name in the layer code (for people; code reads `class` and `madeBy`). */
  readonly tensor: string;
  readonly shape: readonly number[];
  /** numel·4 (float32). */
  readonly bytes: number;
  readonly class: BufferClass;
  readonly madeBy: BufferMaker;
  readonly allocAt: number;
  readonly freeAt: number;
}

/**
 * The staging pool's bytes that the step took and the pool holds at its end (lent and idle), live
 * from op position `at` to the step's end. Drawn from the step's start: the pool keeps a buffer
 * across steps, so from the second step of a shape on its buffers are resident throughout.
 */
export interface StagingSample {
  readonly at: number;
  readonly bytes: number;
}

/** Every buffer one rank made or released during a step, with the staging pool's level. */
export interface StepMemoryRecord {
  readonly rank: number;
  /** Op positions of the step: the plan's op count. */
  readonly ops: number;
  readonly buffers: readonly BufferRecord[];
  /** Empty where the collectives stage nothing on a GPU (host tensors, shapes). */
  readonly staging: readonly StagingSample[];
}

interface Live {
  readonly id: number;
  readonly tensor: string;
  readonly shape: readonly number[];
  readonly allocAt: number;
  readonly allocPhase: OpPhase;
  readonly upload: boolean;
  weights: boolean;
  maker?: BufferMaker;
  readInBackward: boolean;
  freeAt?: number;
}

const isOpSpec = (v: unknown): v is OpSpec =>
  typeof v === 'object' && v !== null && typeof (v as OpSpec).label === 'string' && 'split' in v;

/**
 * Records the buffers of one rank's step, wrapping the layer's backend and communicator: every
 * tensor made (`tensor`, a collective's new result), every release, and every op that reads it.
 * Positions count the plan's ops in issue order: compute ops as the backend receives them,
 * collectives when the layer names them (LayerComm's onCall, in program order), the order makePlan
 * records. Classes come from what happened, not from names: weights are registered, gradients are
 * the step's `grads`, activations were made in forward and read after it.
 */
export class MemoryRecorder<T extends object> {
  private readonly bufs = new Map<T, Live>();
  private readonly order: Live[] = [];
  private readonly named: { readonly opIndex: number; readonly c: NamedCollective }[] = [];
  private at = 0;
  private phase: OpPhase = 'forward';

  constructor(
    private readonly shapeOf: (t: T) => readonly number[],
    private readonly nameOf: (t: T) => string,
    /** Bytes of the device's staging pool this step has taken and the pool still holds (GPU collectives only). */
    private readonly stagingBytes?: () => number,
  ) {}

  private made(t: T, upload: boolean): void {
    if (this.bufs.has(t)) return;
    const b: Live = {
      id: this.order.length,
      tensor: this.nameOf(t),
      shape: [...this.shapeOf(t)],
      allocAt: this.at,
      allocPhase: this.phase,
      upload,
      weights: false,
      readInBackward: false,
    };
    if (upload) b.maker = { kind: 'upload' };
    this.bufs.set(t, b);
    this.order.push(b);
  }

  private used(t: unknown, maker: BufferMaker, phase: OpPhase): void {
    const b = this.bufs.get(t as T);
    if (!b || b.freeAt !== undefined) return;
    b.maker ??= maker;
    if (phase !== 'forward' && b.allocPhase === 'forward') b.readInBackward = true;
  }

  /** The rank's weights, uploaded before the step (call before running it). */
  weights(w: WeightSet<T>): void {
    for (const t of Object.values(w) as T[]) {
      this.made(t, true);
      this.bufs.get(t)!.weights = true;
    }
  }

  /** LayerComm's onCall: the collective takes the next op position. */
  collective(c: NamedCollective): void {
    this.named.push({ opIndex: this.at++, c });
  }

  /** `be` with every tensor, release and op recorded. */
  backend(be: Backend<T>): Backend<T> {
    return new Proxy(be, {
      get: (target, key) => {
        const v: unknown = Reflect.get(target, key, target);
        if (typeof v !== 'function') return v;
        const f = v as (...a: unknown[]) => unknown;
        if (key === 'tensor')
          return (name: string, shape: readonly number[], data?: Float32Array | Float64Array) => {
            const t = f.call(target, name, shape, data) as T;
            this.made(t, data !== undefined);
            return t;
          };
        if (key === 'release')
          return (t: T) => {
            const b = this.bufs.get(t);
            if (b && b.freeAt === undefined) b.freeAt = this.at;
            return f.call(target, t);
          };
        return (...args: unknown[]) => {
          const op = args[0];
          if (isOpSpec(op)) {
            const maker: BufferMaker = { kind: 'compute', opIndex: this.at++, label: op.label };
            for (const a of args.slice(1))
              for (const t of Array.isArray(a) ? a : [a]) this.used(t, maker, target.phase);
          }
          return f.apply(target, args);
        };
      },
      set: (target, key, value) => {
        if (key === 'phase') this.phase = value as OpPhase;
        return Reflect.set(target, key, value, target);
      },
    });
  }

  /** `comm` with every input read and every new result recorded against the collective the layer named. */
  comm(comm: Collectives<T>): Collectives<T> {
    const call = async (x: T, run: () => Promise<T>): Promise<T> => {
      const n = this.named.shift();
      if (!n) throw new Error('MemoryRecorder: a collective was issued outside the layer’s named communicator.');
      const maker: BufferMaker = { kind: 'collective', opIndex: n.opIndex, label: n.c.name };
      this.used(x, maker, n.c.phase);
      const y = await run();
      if (y !== x && !this.bufs.has(y)) {
        const phase = this.phase;
        this.phase = n.c.phase;
        this.made(y, false);
        this.phase = phase;
        this.bufs.get(y)!.maker = maker;
      }
      return y;
    };
    return {
      rank: comm.rank,
      size: comm.size,
      transport: comm.transport,
      allReduce: (x: T, op?: ReduceOp, tensor?: string) => call(x, () => comm.allReduce(x, op, tensor)),
      reduceScatter: (x: T, dim: number, op?: ReduceOp, tensor?: string) =>
        call(x, () => comm.reduceScatter(x, dim, op, tensor)),
      allGather: (x: T, dim: number, tensor?: string) => call(x, () => comm.allGather(x, dim, tensor)),
      broadcast: (x: T, root: number, tensor?: string) => call(x, () => comm.broadcast(x, root, tensor)),
      ringExchange: (x: T, tensor?: string) => call(x, () => comm.ringExchange(x, tensor)),
      barrier: () => comm.barrier(),
      shard: (x: T, dim: number) => comm.shard(x, dim),
    };
  }

  /** The record, once the step has returned `result` (its `grads` are the gradients); unreleased buffers end at the step's end. */
  finish(rank: number, result: StepResult<T>): StepMemoryRecord {
    const grads = new Set(Object.values(result.grads) as T[]);
    const classOf = (t: T, b: Live): BufferClass =>
      b.weights
        ? 'weights'
        : grads.has(t)
          ? 'gradients'
          : b.allocPhase === 'forward' && b.readInBackward
            ? 'activations'
            : 'workspace';
    const buffers: BufferRecord[] = [...this.bufs].map(([t, b]) => ({
      id: b.id,
      tensor: b.tensor,
      shape: b.shape,
      bytes: numel(b.shape) * 4,
      class: classOf(t, b),
      madeBy: b.maker ?? { kind: 'unused' },
      allocAt: b.weights ? 0 : b.allocAt,
      freeAt: b.freeAt ?? this.at,
    }));
    buffers.sort((a, b) => a.id - b.id);
    const staging = this.stagingBytes ? [{ at: 0, bytes: this.stagingBytes() }] : [];
    return { rank, ops: this.at, buffers, staging };
  }
}
