import { interleavedRule, stagePasses } from '../../mesh/pipeline-schedules.ts';

/**
 * Megatron-Core's pipeline schedules, simulated event by event
 * (megatron/core/pipeline_parallel/schedules.py, core_v0.19.0):
 *
 * 1F1B (forward_backward_pipelining_without_interleaving) or, with v model chunks per stage,
 * interleaved 1F1B (forward_backward_pipelining_with_interleaving); each stage's order is
 * mesh/pipeline-schedules.ts's, which the ranks' executor runs too.
 *
 * Each stage runs its list in order; an op starts when its stage is free and its input is there:
 * a forward of virtual stage k = c·p + i needs the forward of k − 1 (plus one p2p send of the
 * activation), a backward needs the backward of k + 1 (plus one p2p send of the gradient), the
 * last virtual stage's backward its own forward (the loss). P2p is a delay on the edge; the
 * sending stage is also held `senderBusyMs` after each op it sends from (the whole send when
 * sends block, the overlap's cost when they run beside compute). The bubble is what the
 * simulation leaves idle.
 */
export interface PipelineInput {
  readonly p: number;
  readonly v: number;
  /** m: micro-batches per replica per step. */
  readonly m: number;
  /** One micro-batch's forward / backward of chunk c on stage i, ms. */
  readonly forwardMs: (stage: number, chunk: number) => number;
  readonly backwardMs: (stage: number, chunk: number) => number;
  /** One p2p send of the activation (forward) or its gradient (backward) across a stage boundary, ms. */
  readonly p2pMs: number;
  /**
   * How long a stage stays occupied after an op whose output it sends, ms (default 0): the whole
   * p2pMs when sends block (1F1B, or --no-overlap-p2p-communication), or the compute the
   * overlapped send's kernels take from the next op (overlap-cost.ts).
   */
  readonly senderBusyMs?: number;
  /**
   * What stage i waits, ms, when its first op is ready and before it runs (default none): the
   * parameter all-gather its first forward's pre-hook waits for without align_param_gather
   * (dp-sync.ts paramGatherStartWaitMs). Later stages receive their first input that much later.
   */
  readonly startDelayMs?: (stage: number) => number;
  /**
   * The earliest time stage i's first op may start, ms (default 0): its parameters' first bucket
   * landing where the gather was dispatched at the step's start (megatron-release.ts `step-start`).
   */
  readonly startReadyMs?: (stage: number) => number;
}

/** One scheduled forward or backward of one chunk for one micro-batch. */
export interface PipelineOp {
  readonly stage: number;
  readonly chunk: number;
  readonly microBatch: number;
  readonly pass: 'forward' | 'backward';
  readonly t0: number;
  readonly t1: number;
}

/** The simulated step of the pipeline (ms from the first forward). */
export interface PipelineRun {
  readonly p: number;
  readonly v: number;
  readonly m: number;
  /** ops[i]: stage i's ops in execution order. */
  readonly ops: readonly (readonly PipelineOp[])[];
  /** When the last op of any stage ends. */
  readonly spanMs: number;
  /** Σ op time per stage. */
  readonly busyMs: readonly number[];
  /** Idle share of each stage: 1 − busy/span. */
  readonly idleShare: readonly number[];
  /** The busiest stage's idle share of the span (the seeds' "bubble"): (p−1)/(m+p−1) for equal stages. */
  readonly bubbleShare: number;
  /** span / busiest stage − 1: (p − 1)/m for 1F1B with equal stages, (p − 1)/(v·m) interleaved. */
  readonly bubbleRatio: number;
  /** Peak micro-batch chunks whose activations a stage holds (forward done, backward not): 1F1B min(p − i, m). */
  readonly inFlight: readonly number[];
  /** P2p sends in the step (activations and gradients): 2·m·(p·v − 1). */
  readonly p2pSends: number;
}

interface Item {
  readonly chunk: number;
  readonly microBatch: number;
  readonly pass: 'forward' | 'backward';
}

/** Stage i's ops in Megatron's order (mesh/pipeline-schedules.ts: 1F1B, or interleaved when v > 1). */
export function stageOrder(p: number, v: number, m: number, stage: number): Item[] {
  const o = flatOrder(p, v, m, stage);
  return Array.from(o.chunk, (chunk, j) => ({
    microBatch: o.microBatch[j]!,
    chunk,
    pass: o.forward[j] ? 'forward' : 'backward',
  }));
}

/** Stage i's order (stageOrder) as columns: op j is micro-batch microBatch[j], chunk chunk[j], forward when forward[j] = 1. */
interface FlatOrder {
  readonly microBatch: Int32Array;
  readonly chunk: Int32Array;
  readonly forward: Uint8Array;
}

/** flatOrder per (p, v, m), every stage's: a pure function of the degrees, shared by every simulation of them. */
const orderMemo = new Map<string, readonly FlatOrder[]>();

function flatOrders(p: number, v: number, m: number): readonly FlatOrder[] {
  const key = `${p},${v},${m}`;
  let o = orderMemo.get(key);
  if (!o) {
    o = Array.from({ length: p }, (_, i) => flatOrder(p, v, m, i));
    if (orderMemo.size > 256) orderMemo.clear();
    orderMemo.set(key, o);
  }
  return o;
}

function flatOrder(p: number, v: number, m: number, stage: number): FlatOrder {
  const passes = stagePasses(v > 1 ? 'interleaved' : '1f1b', { p, v, m }, stage);
  return {
    microBatch: Int32Array.from(passes, (x) => x.microBatch),
    chunk: Int32Array.from(passes, (x) => x.chunk),
    forward: Uint8Array.from(passes, (x) => (x.pass === 'F' ? 1 : 0)),
  };
}

/**
 * The simulated schedule as columns (what simulatePipeline returns, without an object per op):
 * stage i's ops in execution order are those of flatOrders(p, v, m)[i], starting at t0[i][j]
 * and ending at t1[i][j]; `free[i]` is when stage i is free after its last op.
 */
export interface PipelineTimes {
  readonly p: number;
  readonly v: number;
  readonly m: number;
  readonly orders: readonly FlatOrder[];
  readonly t0: readonly Float64Array[];
  readonly t1: readonly Float64Array[];
  readonly free: readonly number[];
  /** When the last op of any stage ends (max free). */
  readonly spanMs: number;
}

/** Simulates the schedule into columns (see simulatePipeline, which builds its ops from them). */
export function pipelineTimes(x: PipelineInput): PipelineTimes {
  const { p, v, m } = x;
  if (!(Number.isInteger(p) && p >= 1 && Number.isInteger(v) && v >= 1 && Number.isInteger(m) && m >= 1))
    throw new Error(`pipeline degrees must be whole numbers ≥ 1 (p ${p}, v ${v}, m ${m}).`);
  const refused = v > 1 ? interleavedRule(p, m) : undefined;
  if (refused) throw new Error(refused);
  const orders = flatOrders(p, v, m);
  const last = p * v - 1;
  // done{Forward,Backward}[k·m + micro-batch] = end time of virtual stage k's op (NaN: not yet run)
  const doneForward = new Float64Array(p * v * m).fill(NaN);
  const doneBackward = new Float64Array(p * v * m).fill(NaN);
  // One micro-batch's forward / backward of chunk c on stage i, [i·v + c].
  const fwdMs = new Float64Array(p * v);
  const bwdMs = new Float64Array(p * v);
  for (let i = 0; i < p; i++)
    for (let c = 0; c < v; c++) {
      fwdMs[i * v + c] = x.forwardMs(i, c);
      bwdMs[i * v + c] = x.backwardMs(i, c);
    }
  const busy = x.senderBusyMs ?? 0;
  const startDelay = Array.from({ length: p }, (_, i) => x.startDelayMs?.(i) ?? 0);
  const startReady = Array.from({ length: p }, (_, i) => x.startReadyMs?.(i) ?? 0);
  const t0s = orders.map((o) => new Float64Array(o.chunk.length));
  const t1s = orders.map((o) => new Float64Array(o.chunk.length));
  const next = new Array<number>(p).fill(0);
  const free = new Array<number>(p).fill(0);
  let remaining = orders.reduce((a, o) => a + o.chunk.length, 0);
  while (remaining > 0) {
    let progressed = false;
    for (let i = 0; i < p; i++) {
      const o = orders[i]!;
      const n = o.chunk.length;
      while (next[i]! < n) {
        const j = next[i]!;
        const chunk = o.chunk[j]!;
        const mb = o.microBatch[j]!;
        const forward = o.forward[j] === 1;
        const k = chunk * p + i;
        const r = forward
          ? k === 0
            ? 0
            : doneForward[(k - 1) * m + mb]! + x.p2pMs
          : k === last
            ? doneForward[k * m + mb]!
            : doneBackward[(k + 1) * m + mb]! + x.p2pMs;
        if (Number.isNaN(r)) break;
        const t0 = j === 0 ? Math.max(free[i]!, r, startReady[i]!) + startDelay[i]! : Math.max(free[i]!, r);
        const t1 = t0 + (forward ? fwdMs[i * v + chunk]! : bwdMs[i * v + chunk]!);
        (forward ? doneForward : doneBackward)[k * m + mb] = t1;
        t0s[i]![j] = t0;
        t1s[i]![j] = t1;
        const sends = forward ? k < last : k > 0;
        free[i] = t1 + (sends ? busy : 0);
        next[i]!++;
        remaining--;
        progressed = true;
      }
    }
    if (!progressed) throw new Error('pipeline schedule deadlocked (an order waits on itself).');
  }
  return { p, v, m, orders, t0: t0s, t1: t1s, free, spanMs: Math.max(...free) };
}

/** Simulates the schedule; throws if the inputs are not whole degrees or the interleaved m is not a multiple of p. */
export function simulatePipeline(x: PipelineInput): PipelineRun {
  return pipelineRun(pipelineTimes(x));
}

/** The simulated step with an object per op, its bubble and in-flight micro-batches, from its columns. */
export function pipelineRun(times: PipelineTimes): PipelineRun {
  const { p, v, m } = times;
  const ops: PipelineOp[][] = times.orders.map((o, i) =>
    Array.from(o.chunk, (chunk, j) => ({
      stage: i,
      microBatch: o.microBatch[j]!,
      chunk,
      pass: o.forward[j] ? ('forward' as const) : ('backward' as const),
      t0: times.t0[i]![j]!,
      t1: times.t1[i]![j]!,
    })),
  );
  const { free } = times;
  const spanMs = Math.max(...free);
  const busyMs = ops.map((o) => o.reduce((a, e) => a + e.t1 - e.t0, 0));
  const maxBusy = Math.max(...busyMs);
  const inFlight = ops.map((o) => {
    let live = 0;
    let peak = 0;
    for (const e of o) {
      live += e.pass === 'forward' ? 1 : -1;
      peak = Math.max(peak, live);
    }
    return peak;
  });
  return {
    p,
    v,
    m,
    ops,
    spanMs,
    busyMs,
    idleShare: busyMs.map((b) => (spanMs > 0 ? Math.max(0, 1 - b / spanMs) : 0)),
    bubbleShare: spanMs > 0 ? Math.max(0, 1 - maxBusy / spanMs) : 0,
    bubbleRatio: maxBusy > 0 ? Math.max(0, spanMs / maxBusy - 1) : 0,
    inFlight,
    p2pSends: 2 * m * (p * v - 1),
  };
}
