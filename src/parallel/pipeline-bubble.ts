import type { PipelineScheduleName } from '../mesh/pipeline-schedules.ts';
import type { PassSpan } from './pipeline-step.ts';

/** The bubble of a step as the ranks ran it: each stage's idle share of the step, from its passes' spans. */
export interface MeasuredBubble {
  /** The step: from the first pass's start on any rank to the last pass's end, ms. */
  readonly spanMs: number;
  /** busyMs[i]: stage i's Σ pass time (mean over its TP ranks), ms. */
  readonly busyMs: number[];
  /** idleShare[i] = 1 − busyMs[i] / spanMs: what stage i spent waiting (for an input, or at either end of the step). */
  readonly idleShare: number[];
  /** The busiest stage's idle share (the seeds' "bubble"; (p − 1)/(m + p − 1) for 1F1B with equal stages). */
  readonly bubbleShare: number;
}

/**
 * The bubble measured on the ranks: `ranks[r]` = rank r's stage and its passes' spans on one clock
 * (sharedNow). A pass's span runs from its inputs' arrival to its last kernel's end, so a stage's idle
 * time is the waiting for a neighbour and the start and end of the step it sits out.
 */
export function measuredBubble(
  p: number,
  ranks: readonly { stage: number; spans: readonly PassSpan[] }[],
): MeasuredBubble {
  const all = ranks.flatMap((r) => r.spans);
  if (all.length === 0) throw new Error('measuredBubble: no passes were recorded.');
  const t0 = Math.min(...all.map((s) => s.t0));
  const spanMs = Math.max(...all.map((s) => s.t1)) - t0;
  const busyMs = Array.from({ length: p }, (_, i) => {
    const own = ranks.filter((r) => r.stage === i);
    const sum = own.reduce((a, r) => a + r.spans.reduce((b, s) => b + s.t1 - s.t0, 0), 0);
    return own.length ? sum / own.length : 0;
  });
  const idleShare = busyMs.map((b) => (spanMs > 0 ? 1 - b / spanMs : 0));
  return { spanMs, busyMs, idleShare, bubbleShare: Math.min(...idleShare) };
}

/** 1F1B's bubble with equal stages and free p2p: (p − 1)/(m + p − 1) of the step (Narayanan et al. 2021, §2.2). */
export const projectedBubble1F1B = (p: number, m: number): number => (p - 1) / (m + p - 1);

/**
 * The textbook bubble share of a schedule with equal stages and free p2p: AFAB and 1F1B idle
 * (p − 1)(T_F + T_B) per stage beside m(T_F + T_B) busy, (p − 1)/(m + p − 1) (Narayanan et al. 2021
 * §2.2); interleaved with v chunks shrinks each warm-up pass v-fold, (p − 1)/(v·m + p − 1) (ibid.
 * §2.2); ZB-H1 leaves (p − 1)(T_F + T_B − T_W) idle beside m(T_F + T_B + T_W) (Qi et al. 2023,
 * "Zero Bubble Pipeline Parallelism", §2.2), which with T_F = T_B = T_W is (p − 1)/(3m + p − 1).
 */
export function formulaBubble(schedule: PipelineScheduleName, p: number, v: number, m: number): number {
  switch (schedule) {
    case 'afab':
    case '1f1b':
      return projectedBubble1F1B(p, m);
    case 'interleaved':
      return (p - 1) / (v * m + p - 1);
    case 'zb-h1':
      return (p - 1) / (3 * m + p - 1);
  }
}

/** formulaBubble's formula as a reader writes it. */
export const formulaBubbleText: Readonly<Record<PipelineScheduleName, string>> = {
  afab: '(p − 1)/(m + p − 1)',
  '1f1b': '(p − 1)/(m + p − 1)',
  interleaved: '(p − 1)/(v·m + p − 1)',
  'zb-h1': '(p − 1)/(3m + p − 1), T_F = T_B = T_W',
};
