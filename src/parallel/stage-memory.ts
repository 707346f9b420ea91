import { numel } from '../core/shape.ts';
import type { PipelinePass } from '../mesh/pipeline-schedules.ts';
import { stageMemoryClasses, type StageClassBytes, type StageMemoryClass } from '../mesh/pipeline-memory.ts';
import type { Backend } from './backend.ts';

/** The pass (and its micro-batch and chunk) during which a tensor was made or received. */
interface Made {
  readonly bytes: number;
  readonly pass: PipelinePass;
  readonly key: string;
}

/** Where a micro-batch of a chunk stands in the step, at a sample. */
export type MicroBatchState = 'inFlight' | 'awaitingW' | 'done';

/** What the stage step knows at a sample, besides the tensors the tracker saw made and freed. */
export interface StageHoldings<T> {
  /** The stage's weights (uploaded before the step). */
  readonly weights: Iterable<T>;
  /** The step's gradient sums so far. */
  readonly sums: Iterable<T>;
  /** Tensors handed to a p2p send that has not completed. */
  readonly sending: ReadonlySet<T>;
  /** Tensors the step returns (the last stage's per-micro-batch losses): workspace. */
  readonly outputs: Iterable<T | undefined>;
  /** The state of micro-batch `key` ("chunk.j"). */
  readonly state: (key: string) => MicroBatchState;
  /** Everything the backend holds, bytes (the GPU backend's liveBytes); absent: the tracked tensors' sum. */
  readonly liveBytes?: number;
}

/**
 * A stage's live tensors by class, from its own step: every tensor the backend makes or the stage
 * receives is tagged with the pass and micro-batch being run, and dropped when released. At a sample,
 * weights and gradient sums are themselves; a tensor being sent is staging; a forward's tensor of a
 * micro-batch in flight is a saved activation; any tensor of a micro-batch whose W is still to run
 * (ZB-H1) is held for the deferred W; the rest (outputs, leftovers, what the backend holds untracked)
 * is workspace. Bytes are numel·4 (float32).
 */
export class StageMemoryTracker<T> {
  private readonly live = new Map<T, Made>();
  private tag: { pass: PipelinePass; key: string } = { pass: 'F', key: '' };

  constructor(private readonly shapeOf: (t: T) => readonly number[]) {}

  /** The pass now running: what is made or received from here on is tagged with it. */
  enter(pass: PipelinePass, key: string): void {
    this.tag = { pass, key };
  }

  /** Records a tensor made outside the backend (a received p2p tensor). */
  made(t: T): void {
    if (!this.live.has(t)) this.live.set(t, { bytes: numel(this.shapeOf(t)) * 4, ...this.tag });
  }

  /** `be` with every tensor it makes and frees recorded. */
  backend(be: Backend<T>): Backend<T> {
    return new Proxy(be, {
      get: (target, key) => {
        const v: unknown = Reflect.get(target, key, target);
        if (typeof v !== 'function') return v;
        const f = v as (...a: unknown[]) => unknown;
        if (key === 'tensor')
          return (...a: unknown[]) => {
            const t = f.apply(target, a) as T;
            this.made(t);
            return t;
          };
        if (key === 'release')
          return (t: T) => {
            this.live.delete(t);
            return f.call(target, t);
          };
        return f.bind(target);
      },
    });
  }

  /** Bytes per class now. */
  sample(h: StageHoldings<T>): StageClassBytes {
    const out = Object.fromEntries(stageMemoryClasses.map((c) => [c, 0])) as Record<StageMemoryClass, number>;
    const seen = new Set<T>();
    const add = (c: StageMemoryClass, t: T | undefined, bytes?: number): void => {
      if (t === undefined || seen.has(t)) return;
      seen.add(t);
      out[c] += bytes ?? this.live.get(t)?.bytes ?? numel(this.shapeOf(t)) * 4;
    };
    for (const t of h.weights) add('weights', t);
    for (const t of h.sums) add('gradients', t);
    for (const t of h.sending) add('staging', t);
    for (const t of h.outputs) add('workspace', t);
    for (const [t, m] of this.live) {
      const state = h.state(m.key);
      add(
        state === 'awaitingW' ? 'deferredW' : state === 'inFlight' && m.pass === 'F' ? 'activations' : 'workspace',
        t,
      );
    }
    if (h.liveBytes !== undefined) {
      const counted = stageMemoryClasses.reduce((a, c) => a + (c === 'workspace' ? 0 : out[c]), 0);
      out.workspace = h.liveBytes - counted;
    }
    return out;
  }
}
