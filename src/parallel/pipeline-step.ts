import type { PointToPoint } from '../comm/p2p.ts';
import { splitsBackward, stagePasses, type PipelinePass, type ScheduledPass } from '../mesh/pipeline-schedules.ts';
import { addInPlaceKernel } from '../reference/add.ts';
import { opSpec, type Backend } from './backend.ts';
import type { StageClassBytes } from '../mesh/pipeline-memory.ts';
import { DeferringBackend, type DeferredWgrad } from './deferred-wgrad.ts';
import { StageMemoryTracker } from './stage-memory.ts';
import { localDims } from './dims.ts';
import {
  blockBackward,
  blockForward,
  embedBackward,
  embedForward,
  finalizeBlockGrads,
  lossBackward,
  lossForward,
  type BlockSaved,
  type LossSaved,
} from './layer.ts';
import type { LayerComm } from './layer-comm.ts';
import { blockConfig, chunkBlocks, microBatchInputs, type PipelineModel } from './pipeline-model.ts';
import type { RankOwnership } from './plan-types.ts';
import type { WeightSet } from './weights.ts';

/** One pass a stage ran, on the caller's clock (ms): from its inputs' arrival to its last kernel's end. */
export interface PassSpan {
  readonly pass: PipelinePass;
  readonly microBatch: number;
  readonly chunk: number;
  readonly t0: number;
  readonly t1: number;
  /** The rank's live buffer bytes at the pass's end (StageObserver.liveBytes), when observed. */
  readonly liveBytes?: number;
  /**
   * The stage's live bytes by class at the pass's end (after its output's send is posted), from its
   * own tensors (stage-memory.ts StageMemoryTracker); workspace is liveBytes less the others when observed.
   */
  readonly classes?: StageClassBytes;
}

/**
 * One point-to-point message of a stage's step, as this stage saw it: a send from its posting to its
 * completion, a receive from its call to the tensor's arrival (ms, the step's clock). `virtualStage`
 * k is the virtual stage whose output (activation) or output's gradient it carries, so the activation
 * of k goes from stage k mod p to stage (k + 1) mod p and its gradient back.
 */
export interface StageMessage {
  readonly kind: 'send' | 'recv';
  readonly carries: 'activation' | 'gradient';
  /** The other end's stage (its PP group rank). */
  readonly peerStage: number;
  readonly virtualStage: number;
  readonly microBatch: number;
  readonly tensor: string;
  readonly shape: readonly number[];
  readonly t0: number;
  readonly t1: number;
}

/** What a caller may watch of a stage's step: each p2p message, and the live bytes sampled at each pass's end. */
export interface StageObserver<T = unknown> {
  readonly message?: (m: StageMessage) => void;
  readonly liveBytes?: () => number;
  /** Each received tensor ("act.k.j" / "grad.k.j"), awaited before the pass that consumes it (a read-back here adds to that pass). */
  readonly received?: (tensor: string, t: T) => Promise<void>;
}

/** A step's options: what to observe, and (data parallel) the replica's first micro-batch of the global batch. */
export interface StageStepOptions<T = unknown> {
  readonly observe?: StageObserver<T>;
  /** Replica q of d runs micro-batches q·m … q·m + m − 1 of the global batch (microBatchInputs); default 0. */
  readonly firstMicroBatch?: number;
}

/** How a stage reaches its neighbours: point-to-point in its PP group (group rank = stage). */
export interface StageLink<T> {
  readonly p2p: PointToPoint<T>;
  /** Takes ownership of a received tensor (the GPU backend frees it with the step's). */
  readonly adopt?: (t: T) => void;
}

/** One stage's weights on one TP rank: each of its blocks' (by global index) and the head's (emb, wout where it holds them). */
export interface StageWeights<T> {
  readonly blocks: ReadonlyMap<number, WeightSet<T>>;
  readonly head: WeightSet<T>;
}

/** One stage's step on one TP rank: per micro-batch loss [s, b] (the last stage), the accumulated gradients, the passes' spans. */
export interface StageStepResult<T> {
  readonly losses: (T | undefined)[];
  readonly blockGrads: Map<number, WeightSet<T>>;
  readonly headGrads: WeightSet<T>;
  readonly spans: PassSpan[];
}

/** What a forward keeps until its backward: the chunk's ids (first virtual stage), each block's saved tensors, the loss's. */
interface InFlight<T> {
  readonly ids?: T;
  readonly saved: BlockSaved<T>[];
  readonly loss?: LossSaved<T>;
}

/**
 * One training step of stage `stage` of a pipeline model on one TP rank: the schedule's passes in
 * order (mesh/pipeline-schedules.ts), each block run by the tensor-parallel layer (layer.ts) over the
 * TP group `lc`; the activation [sl, b, h] of virtual stage k sent to the stage holding k + 1 and its
 * gradient back, tensors named "act.k.j" / "grad.k.j" (virtual stage k's output, micro-batch j).
 * Sends are posted as soon as their tensor is ready and waited for at the step's end (a stage never
 * blocks on its own send, so no order of the schedule can deadlock on the transport's buffer).
 * Gradients accumulate over the m micro-batches (the sum of each micro-batch's mean-loss gradient;
 * Megatron scales each micro-batch's loss by 1/m, a common factor), then the replicated RMSNorm gains
 * are all-reduced under SP (finalize_model_grads). ZB-H1's B runs a backward with its weight-gradient
 * ops set aside (DeferringBackend) and its W issues them.
 */
export async function pipelineStageStep<T>(
  backend: Backend<T>,
  lc: LayerComm<T>,
  link: StageLink<T>,
  model: PipelineModel,
  stage: number,
  own: RankOwnership,
  weights: StageWeights<T>,
  now: () => number,
  opts: StageStepOptions<T> = {},
): Promise<StageStepResult<T>> {
  const observe = opts.observe ?? {};
  const firstMicroBatch = opts.firstMicroBatch ?? 0;
  const { p, v, m } = model;
  const c = model.layer;
  const { s, b, h, sl } = localDims(c);
  const tracker = new StageMemoryTracker<T>((t) => backend.shapeOf(t));
  const inner = tracker.backend(backend);
  const be = new DeferringBackend(inner);
  lc.onResult = (t) => tracker.made(t);
  const blocks = chunkBlocks(model)[stage]!;
  const last = p * v - 1;
  const actShape = [sl, b, h];
  const passes = stagePasses(model.schedule, model, stage);
  const split = splitsBackward(model.schedule);
  const inFlight = new Map<string, InFlight<T>>();
  const pendingW = new Map<string, { w: DeferredWgrad; grads: Map<number, WeightSet<T>>; head: WeightSet<T> }>();
  const losses: (T | undefined)[] = Array.from({ length: m }, () => undefined);
  const blockGrads = new Map<number, WeightSet<T>>();
  const headGrads: WeightSet<T> = {};
  const spans: PassSpan[] = [];
  const sends: Promise<void>[] = [];
  const sending = new Set<T>();

  const key = (chunk: number, j: number) => `${chunk}.${j}`;
  // "act.k.j": virtual stage k's output for micro-batch j; "grad.k.j": its gradient.
  const message = (kind: StageMessage['kind'], peerStage: number, tensor: string, t0: number): void => {
    const [what, k, j] = tensor.split('.');
    observe.message?.({
      kind,
      carries: what === 'act' ? 'activation' : 'gradient',
      peerStage,
      virtualStage: Number(k),
      microBatch: Number(j),
      tensor,
      shape: actShape,
      t0,
      t1: now(),
    });
  };
  const recv = async (peer: number, tensor: string): Promise<T> => {
    const t0 = now();
    const t = await link.p2p.recv(actShape, peer, tensor);
    message('recv', peer, tensor, t0);
    link.adopt?.(t);
    tracker.made(t);
    await observe.received?.(tensor, t);
    return t;
  };
  const send = async (x: T, peer: number, tensor: string): Promise<void> => {
    await inner.flush(); // the kernels that wrote x have run before it is read back
    const t0 = now();
    sending.add(x);
    sends.push(
      link.p2p.send(x, peer, tensor).then(() => {
        message('send', peer, tensor, t0);
        sending.delete(x);
        inner.release(x);
      }),
    );
  };
  const allWeights = (): T[] => [...weights.blocks.values(), weights.head].flatMap((w) => Object.values(w) as T[]);
  const allSums = (): T[] => [...blockGrads.values(), headGrads].flatMap((w) => Object.values(w) as T[]);
  // A pass's span ends at its last kernel; its live bytes and classes are read once its output's send is posted.
  const span = (op: ScheduledPass, t0: number, t1: number): PassSpan => {
    const live = observe.liveBytes?.();
    const classes = tracker.sample({
      weights: allWeights(),
      sums: allSums(),
      sending,
      outputs: losses,
      state: (k) => (inFlight.has(k) ? 'inFlight' : pendingW.has(k) ? 'awaitingW' : 'done'),
      ...(live !== undefined && { liveBytes: live }),
    });
    return { ...op, t0, t1, ...(live !== undefined && { liveBytes: live }), classes };
  };
  // Σ over micro-batches: the first micro-batch's gradient becomes the sum, later ones are added in.
  const accumulate = (into: WeightSet<T>, from: WeightSet<T>): void => {
    for (const [name, g] of Object.entries(from) as [keyof WeightSet<T>, T][]) {
      const sum = into[name];
      if (sum === undefined) into[name] = g;
      else {
        inner.kernel(
          opSpec(`grad.accumulate.${name}`, 'replicated', { role: 'wgrad', weight: name }),
          addInPlaceKernel,
          [sum, g],
          {},
        );
        inner.release(g);
      }
    }
  };
  const accumulateAll = (grads: Map<number, WeightSet<T>>, head: WeightSet<T>): void => {
    for (const [l, g] of grads) {
      let sum = blockGrads.get(l);
      if (!sum) blockGrads.set(l, (sum = {}));
      accumulate(sum, g);
    }
    accumulate(headGrads, head);
  };

  for (const op of passes) {
    const { chunk, microBatch: j } = op;
    const k = chunk * p + stage;
    const ids = blocks[chunk]!;
    tracker.enter(op.pass, key(chunk, j));
    if (op.pass === 'F') {
      const data = k === 0 || k === last ? microBatchInputs(model, firstMicroBatch + j) : undefined;
      const input = k === 0 ? undefined : await recv((stage - 1 + p) % p, `act.${k - 1}.${j}`);
      const t0 = now();
      let tokens: T | undefined;
      let x: T;
      if (input === undefined) {
        tokens = be.tensor('ids', [s, b], data!.ids!);
        x = await embedForward(be, lc, c, own, weights.head, tokens);
      } else x = input;
      const saved: BlockSaved<T>[] = [];
      for (const l of ids) {
        const r = await blockForward(be, lc, blockConfig(model, l), own, weights.blocks.get(l)!, x);
        saved.push(r.saved);
        x = r.y;
      }
      let loss: LossSaved<T> | undefined;
      if (k === last) {
        const targets = be.tensor('targets', [s, b], data!.targets!);
        const r = await lossForward(be, lc, c, own, weights.head, x, targets);
        losses[j] = r.loss;
        loss = r.saved;
      }
      await inner.flush();
      const t1 = now();
      inFlight.set(key(chunk, j), { ...(tokens !== undefined && { ids: tokens }), saved, ...(loss && { loss }) });
      if (k < last) await send(x, (stage + 1) % p, `act.${k}.${j}`);
      spans.push(span(op, t0, t1));
    } else if (op.pass === 'B') {
      const f = inFlight.get(key(chunk, j));
      if (!f) throw new Error(`stage ${stage}: backward of micro-batch ${j}, chunk ${chunk} before its forward.`);
      inFlight.delete(key(chunk, j));
      const upstream = k === last ? undefined : await recv((stage + 1) % p, `grad.${k}.${j}`);
      const t0 = now();
      if (split) be.defer();
      const grads = new Map<number, WeightSet<T>>();
      const head: WeightSet<T> = {};
      let dy: T;
      if (upstream === undefined) {
        dy = await lossBackward(be, lc, c, own, weights.head, f.loss!, head);
        be.release(f.loss!.y); // the last block's output: read by the output layer's wgrad
      } else dy = upstream;
      for (let n = ids.length - 1; n >= 0; n--) {
        const l = ids[n]!;
        const g: WeightSet<T> = {};
        const r = await blockBackward(be, lc, blockConfig(model, l), weights.blocks.get(l)!, f.saved[n]!, dy, g);
        be.release(r.dx2);
        grads.set(l, g);
        dy = r.dx;
      }
      if (k === 0) await embedBackward(be, lc, c, own, weights.head, f.ids!, dy, head);
      if (split) pendingW.set(key(chunk, j), { w: be.take(), grads, head });
      else accumulateAll(grads, head);
      await inner.flush();
      const t1 = now();
      if (k > 0) await send(dy, (stage - 1 + p) % p, `grad.${k - 1}.${j}`);
      spans.push(span(op, t0, t1));
    } else {
      const pending = pendingW.get(key(chunk, j));
      if (!pending) throw new Error(`stage ${stage}: W of micro-batch ${j}, chunk ${chunk} before its B.`);
      pendingW.delete(key(chunk, j));
      const t0 = now();
      pending.w.run();
      accumulateAll(pending.grads, pending.head);
      await inner.flush();
      spans.push(span(op, t0, now()));
    }
  }
  await Promise.all(sends);
  lc.onResult = undefined;
  inner.phase = lc.phase = 'finalize';
  for (const [l, g] of blockGrads) await finalizeBlockGrads(inner, lc, blockConfig(model, l), g);
  await inner.flush();
  return { losses, blockGrads, headGrads, spans };
}
