import { livePeak } from '../accounting/live-memory.ts';
import type { BufferClass } from '../parallel/memory-record.ts';
import type { PipelineRun } from './pipeline-schedule.ts';

/**
 * Memory by lifetime (seed M107): resident for the whole run (weights, fp32 main weights, optimizer
 * state or its shard), per step (the gradient buffer), per micro-batch (a chunk's activations, from
 * its forward to its backward: in-flight micro-batches × activations), transient (what lives
 * inside one op: the fp32 logits of vocab-parallel cross entropy, a recompute unit, a p2p buffer).
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
  /** Activations a chunk keeps per micro-batch, from its forward's start to its backward's end. */
  readonly keptBytes: (chunk: number) => number;
  /** Held during a chunk's backward only (recompute). */
  readonly backwardTransientBytes: (chunk: number) => number;
  /** Held during a chunk's forward only (the 16-bit logits beside their fp32 copy). */
  readonly forwardTransientBytes: (chunk: number) => number;
  /** Held from a chunk's forward to its backward, transient in Megatron's sense (the fp32 softmax of cross entropy). */
  readonly lossBytes: (chunk: number) => number;
}

/** The intervals of stage `stage` over the simulated schedule, the run lasting `endMs`. */
export function stageMemory(run: PipelineRun, stage: number, a: StageAllocations, endMs: number): StageMemory {
  const out: MemoryInterval[] = [];
  for (const r of a.resident) out.push({ class: 'resident', label: r.label, bytes: r.bytes, t0: 0, t1: endMs });
  for (const r of a.perStep) out.push({ class: 'perStep', label: r.label, bytes: r.bytes, t0: 0, t1: endMs });
  const ops = run.ops[stage] ?? [];
  const backward = new Map(ops.filter((o) => o.pass === 'backward').map((o) => [o.chunk * run.m + o.microBatch, o]));
  for (const f of ops) {
    if (f.pass !== 'forward') continue;
    const b = backward.get(f.chunk * run.m + f.microBatch);
    const end = b?.t1 ?? endMs;
    const tag = `micro-batch ${f.microBatch}, chunk ${f.chunk}`;
    const kept = a.keptBytes(f.chunk);
    if (kept > 0) out.push({ class: 'perMicroBatch', label: `activations (${tag})`, bytes: kept, t0: f.t0, t1: end });
    const loss = a.lossBytes(f.chunk);
    if (loss > 0)
      out.push({ class: 'transient', label: `fp32 softmax of cross entropy (${tag})`, bytes: loss, t0: f.t0, t1: end });
    const fwd = a.forwardTransientBytes(f.chunk);
    if (fwd > 0) out.push({ class: 'transient', label: `16-bit logits (${tag})`, bytes: fwd, t0: f.t0, t1: f.t1 });
    const redo = a.backwardTransientBytes(f.chunk);
    if (b && redo > 0)
      out.push({ class: 'transient', label: `recomputed activations (${tag})`, bytes: redo, t0: b.t0, t1: b.t1 });
  }
  return peakOf(stage, out);
}
