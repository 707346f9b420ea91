import {
  splitsBackward,
  stagePasses,
  type PipelineDegrees,
  type PipelineScheduleName,
  type ScheduledPass,
} from './pipeline-schedules.ts';

/**
 * What a stage holds at the end of one of its passes, counted from the schedule's order alone
 * (pipeline-schedules.ts stagePasses): a micro-batch's saved activations are held from its forward
 * to its backward (B); under ZB-H1 the backward's weight-gradient inputs and its gradient buffers
 * are held from B to W (Qi et al. 2023, §3.1: W deferred fills the cool-down's idle time, and what
 * W reads stays alive meanwhile).
 */
export interface HeldAfterPass {
  readonly pass: ScheduledPass;
  /** Micro-batches whose forward has run and whose backward has not, per chunk [v]. */
  readonly inFlight: readonly number[];
  /** Micro-batches whose B has run and whose W has not (ZB-H1 only), per chunk [v]. */
  readonly deferredW: readonly number[];
  /** Whether the step's gradient sums exist yet: after the first whole backward, or under ZB-H1 the first W. */
  readonly gradients: boolean;
}

/** The counts after each pass of stage `stage`, in its execution order. */
export function stageHeld(schedule: PipelineScheduleName, d: PipelineDegrees, stage: number): HeldAfterPass[] {
  const split = splitsBackward(schedule);
  const inFlight = new Array<number>(d.v).fill(0);
  const deferredW = new Array<number>(d.v).fill(0);
  let gradients = false;
  return stagePasses(schedule, d, stage).map((pass) => {
    const c = pass.chunk;
    if (pass.pass === 'F') inFlight[c]!++;
    else if (pass.pass === 'B') {
      inFlight[c]!--;
      if (split) deferredW[c]!++;
      else gradients = true;
    } else {
      deferredW[c]!--;
      gradients = true;
    }
    return { pass, inFlight: [...inFlight], deferredW: [...deferredW], gradients };
  });
}

/** The most micro-batches a stage holds at once: in flight, and (ZB-H1) waiting for their W. */
export function heldPeaks(held: readonly HeldAfterPass[]): { readonly inFlight: number; readonly deferredW: number } {
  const sum = (xs: readonly number[]) => xs.reduce((a, x) => a + x, 0);
  return {
    inFlight: Math.max(0, ...held.map((h) => sum(h.inFlight))),
    deferredW: Math.max(0, ...held.map((h) => sum(h.deferredW))),
  };
}

/**
 * A stage's memory classes on one rank, bytes: weights (resident), the step's gradient sums,
 * activations saved by the forwards in flight, what deferred W passes hold (ZB-H1), p2p sends not yet
 * completed (staging), and the rest the backend holds (workspace: the step's outputs, transients).
 */
export const stageMemoryClasses = ['weights', 'gradients', 'activations', 'deferredW', 'staging', 'workspace'] as const;

/** One of stageMemoryClasses. */
export type StageMemoryClass = (typeof stageMemoryClasses)[number];

/** Bytes per class. */
export type StageClassBytes = Readonly<Record<StageMemoryClass, number>>;

/** What one unit of each counted class costs on a stage's rank, bytes. */
export interface StageUnitBytes {
  readonly weights: number;
  /** The gradient sums, once they exist (one float per local weight element). */
  readonly gradients: number;
  /** The activations one micro-batch's forward of chunk c keeps until its backward. */
  readonly savedPerMicroBatch: (chunk: number) => number;
  /** What one backward of chunk c leaves alive until its deferred W (ZB-H1). */
  readonly deferredPerMicroBatch: (chunk: number) => number;
}

/**
 * The accounting of the counted classes after each pass: weights, gradients (once they exist),
 * Σ_c inFlight[c]·saved(c), Σ_c deferredW[c]·deferred(c). Staging and workspace are not counted
 * (they depend on when the transport finishes, not on the order): 0 here.
 */
export function stageClassBytes(held: readonly HeldAfterPass[], unit: StageUnitBytes): StageClassBytes[] {
  const dot = (xs: readonly number[], f: (c: number) => number) => xs.reduce((a, x, c) => a + (x ? x * f(c) : 0), 0);
  return held.map((h) => ({
    weights: unit.weights,
    gradients: h.gradients ? unit.gradients : 0,
    activations: dot(h.inFlight, unit.savedPerMicroBatch),
    deferredW: dot(h.deferredW, unit.deferredPerMicroBatch),
    staging: 0,
    workspace: 0,
  }));
}
