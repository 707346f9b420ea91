import { livePeak, peakOfColumns } from '../../accounting/live-memory.ts';
import type { BufferClass } from '../../parallel/memory-record.ts';
import type { PipelineRun, PipelineTimes } from './pipeline-schedule.ts';

/**
 * Memory by lifetime (seed 004 M107, docs/sources.md): resident for the whole run (weights, fp32
 * main weights, optimizer state or its shard), per step (the gradient buffer), per micro-batch (a
 * chunk's activations, from its forward to its backward: in-flight micro-batches × activations),
 * transient (what lives inside one op: the fp32 logits of vocab-parallel cross entropy, a
 * recompute unit, a p2p buffer).
 */
export type MemoryClass = 'resident' | 'perStep' | 'perMicroBatch' | 'transient';

/** Every lifetime class, in display order. */
export const memoryClasses: readonly MemoryClass[] = ['resident', 'perStep', 'perMicroBatch', 'transient'];

/** One allocation on one pipeline stage's GPU: live over [t0, t1) ms of the step. */
export interface MemoryInterval {
  readonly class: MemoryClass;
  readonly label: string;
  readonly bytes: number;
  readonly t0: number;
  readonly t1: number;
}

/** One stage's allocations and its peak: the maximum over time of the live bytes (not a sum of maxima). */
export interface StageMemory {
  readonly stage: number;
  readonly intervals: readonly MemoryInterval[];
  readonly peakBytes: number;
  readonly peakAtMs: number;
  /** Live bytes per class at the peak. */
  readonly atPeak: Readonly<Record<MemoryClass, number>>;
}

/** The peak of live bytes over a set of intervals (an interval ending at t is gone at t; see livePeak). */
export function peakOf(stage: number, intervals: readonly MemoryInterval[]): StageMemory {
  const { peakBytes, peakAt, alive } = livePeak(intervals);
  const atPeak: Record<MemoryClass, number> = { resident: 0, perStep: 0, perMicroBatch: 0, transient: 0 };
  for (const i of alive) atPeak[intervals[i]!.class] += intervals[i]!.bytes;
  return { stage, intervals, peakBytes, peakAtMs: peakAt, atPeak };
}

/**
 * The ranks' buffer classes (src/parallel/memory-record.ts) in this lifetime vocabulary: weights
 * and optimizer state live for the run, gradients for the step (the gradient buffer), activations
 * kept for backward for their micro-batch, workspace and communication staging inside an op or a
 * collective.
 */
export const lifetimeOfBuffer: Readonly<Record<BufferClass, MemoryClass>> = {
  weights: 'resident',
  optimizerState: 'resident',
  gradients: 'perStep',
  activations: 'perMicroBatch',
  workspace: 'transient',
  staging: 'transient',
};

/** What one stage allocates, by lifetime. */
export interface StageAllocations {
  readonly resident: readonly { readonly label: string; readonly bytes: number }[];
  readonly perStep: readonly { readonly label: string; readonly bytes: number }[];
  /** Activations a chunk of a micro-batch keeps, from its forward's start to its backward's end. */
  readonly keptBytes: (chunk: number, microBatch: number) => number;
  /** Held during a chunk's backward only (recompute; on the last stage at least the 16-bit logits gradient). */
  readonly backwardTransientBytes: (chunk: number) => number;
  /** Held during a chunk's forward only (the 16-bit logits beside their fp32 copy; a MoE layer's permutation buffers). */
  readonly forwardTransientBytes: (chunk: number) => number;
  /** Held from a chunk's forward to its backward, transient in Megatron's sense (the fp32 softmax of cross entropy). */
  readonly lossBytes: (chunk: number) => number;
}

/** The intervals of stage `stage` over the simulated schedule, the run lasting `endMs`. */
export function stageMemory(run: PipelineRun, stage: number, a: StageAllocations, endMs: number): StageMemory {
  const ops = run.ops[stage] ?? [];
  const cols = allocations(
    {
      microBatch: ops.map((o) => o.microBatch),
      chunk: ops.map((o) => o.chunk),
      forward: ops.map((o) => (o.pass === 'forward' ? 1 : 0)),
      t0: ops.map((o) => o.t0),
      t1: ops.map((o) => o.t1),
    },
    run.v,
    run.m,
    a,
    endMs,
    true,
  );
  const out: MemoryInterval[] = cols.bytes.map((bytes, i) => ({
    class: cols.classes[i]!,
    label: cols.labels[i]!,
    bytes,
    t0: cols.t0[i]!,
    t1: cols.t1[i]!,
  }));
  return peakOf(stage, out);
}

/**
 * stageMemory(run, stage, a, endMs).peakBytes from the simulation's columns, without building an
 * interval per allocation. The peak does not depend on `endMs` as long as the run's last op
 * ends before it (every allocation opens at an op's start; what closes at endMs closes after
 * them): assembleStep's endMs is the step, which adds the optimizer's time after the last op.
 */
export function stagePeakBytes(run: PipelineTimes, stage: number, a: StageAllocations): number {
  const o = run.orders[stage]!;
  const cols = allocations(
    { ...o, t0: run.t0[stage]!, t1: run.t1[stage]! },
    run.v,
    run.m,
    a,
    Number.POSITIVE_INFINITY,
    false,
  );
  return peakOfColumns(cols.t0, cols.t1, cols.bytes).peakBytes;
}

/** One stage's ops in execution order, as columns (forward[j] = 1 for a forward). */
interface StageOps {
  readonly microBatch: ArrayLike<number>;
  readonly chunk: ArrayLike<number>;
  readonly forward: ArrayLike<number>;
  readonly t0: ArrayLike<number>;
  readonly t1: ArrayLike<number>;
}

/** A stage's allocations as columns in one fixed order, labels only when `labelled`. */
function allocations(ops: StageOps, v: number, m: number, a: StageAllocations, endMs: number, labelled: boolean) {
  const classes: MemoryClass[] = [];
  const labels: string[] = [];
  const bytes: number[] = [];
  const t0: number[] = [];
  const t1: number[] = [];
  const push = (c: MemoryClass, label: () => string, b: number, from: number, to: number): void => {
    classes.push(c);
    if (labelled) labels.push(label());
    bytes.push(b);
    t0.push(from);
    t1.push(to);
  };
  for (const r of a.resident) push('resident', () => r.label, r.bytes, 0, endMs);
  for (const r of a.perStep) push('perStep', () => r.label, r.bytes, 0, endMs);
  const n = ops.chunk.length;
  // The backward of (chunk, micro-batch) at [chunk·m + micro-batch]: its op index, −1 if none.
  const backward = new Int32Array(v * m).fill(-1);
  for (let j = 0; j < n; j++) if (!ops.forward[j]) backward[ops.chunk[j]! * m + ops.microBatch[j]!] = j;
  for (let j = 0; j < n; j++) {
    if (!ops.forward[j]) continue;
    const chunk = ops.chunk[j]!;
    const b = backward[chunk * m + ops.microBatch[j]!]!;
    const f0 = ops.t0[j]!;
    const end = b >= 0 ? ops.t1[b]! : endMs;
    const tag = (): string => `micro-batch ${ops.microBatch[j]}, chunk ${chunk}`;
    const kept = a.keptBytes(chunk, ops.microBatch[j]!);
    if (kept > 0) push('perMicroBatch', () => `activations (${tag()})`, kept, f0, end);
    const loss = a.lossBytes(chunk);
    if (loss > 0) push('transient', () => `fp32 softmax of cross entropy (${tag()})`, loss, f0, end);
    const fwd = a.forwardTransientBytes(chunk);
    if (fwd > 0)
      push(
        'transient',
        () => `forward transients: 16-bit logits, MoE permutation buffers (${tag()})`,
        fwd,
        f0,
        ops.t1[j]!,
      );
    const redo = a.backwardTransientBytes(chunk);
    if (b >= 0 && redo > 0)
      push(
        'transient',
        () => `backward transient: recompute or logits gradient (${tag()})`,
        redo,
        ops.t0[b]!,
        ops.t1[b]!,
      );
  }
  return { classes, labels, bytes, t0, t1 };
}
