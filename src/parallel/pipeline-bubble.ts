import type { PipelineScheduleName } from '../mesh/pipeline-schedules.ts';
import type { PassSpan } from './pipeline-step.ts';

/** The bubble of a step as the ranks ran it: each stage's waiting share of the step, from its passes' and receives' spans. */
export interface MeasuredBubble {
  /** The step: from the first pass's start on any rank to the last pass's end, ms. */
  readonly spanMs: number;
  /** busyMs[i]: stage i's Σ pass time (mean over its TP ranks), ms. */
  readonly busyMs: number[];
  /**
   * idleShare[i]: the share of the step stage i spent waiting — for a neighbour's tensor (a p2p
   * receive, from its call to the tensor's arrival), or before its first activity and after its last
   * pass — mean over its TP ranks: the bubble Narayanan et al. and Qi et al. count.
   */
  readonly idleShare: number[];
  /**
   * overheadShare[i]: the rest of the step that is neither a pass nor a wait — the executor between
   * passes (posting a send, sampling memory) — so busy + idle + overhead = the step on every stage.
   */
  readonly overheadShare: number[];
  /** The busiest stage's idle share (the seeds' "bubble"; (p − 1)/(m + p − 1) for 1F1B with equal stages). */
  readonly bubbleShare: number;
}

/** A time interval on the step's clock, ms. */
export interface Interval {
  readonly t0: number;
  readonly t1: number;
}

/** Σ lengths of the union of `xs` clipped to [lo, hi], and the union's first start and last end. */
function covered(xs: readonly Interval[], lo: number, hi: number): { ms: number; first: number; last: number } {
  const sorted = xs
    .map((x) => ({ t0: Math.max(lo, x.t0), t1: Math.min(hi, x.t1) }))
    .filter((x) => x.t1 > x.t0)
    .sort((a, b) => a.t0 - b.t0);
  let ms = 0;
  let end = -Infinity;
  for (const x of sorted) {
    if (x.t0 >= end) ms += x.t1 - x.t0;
    else if (x.t1 > end) ms += x.t1 - end;
    end = Math.max(end, x.t1);
  }
  return { ms, first: sorted[0]?.t0 ?? hi, last: sorted.length ? end : lo };
}

/**
 * The bubble measured on the ranks: `ranks[r]` = rank r's stage, its passes' spans and its p2p
 * receives' waits, on one clock (sharedNow). A pass's span runs from its inputs' arrival to its last
 * kernel's end. Within the step [T0, T1] a rank is in a pass (busy), waiting (in a receive, before its
 * first pass or receive, after its last), or between the two (overhead: the gaps between consecutive
 * passes and receives that no receive covers).
 */
export function measuredBubble(
  p: number,
  ranks: readonly { stage: number; spans: readonly PassSpan[]; waits: readonly Interval[] }[],
): MeasuredBubble {
  const all = ranks.flatMap((r) => r.spans);
  if (all.length === 0) throw new Error('measuredBubble: no passes were recorded.');
  const t0 = Math.min(...all.map((s) => s.t0));
  const t1 = Math.max(...all.map((s) => s.t1));
  const spanMs = t1 - t0;
  const perStage = (f: (r: (typeof ranks)[number]) => number) =>
    Array.from({ length: p }, (_, i) => {
      const own = ranks.filter((r) => r.stage === i);
      return own.length ? own.reduce((a, r) => a + f(r), 0) / own.length : 0;
    });
  const busyMs = perStage((r) => r.spans.reduce((b, s) => b + s.t1 - s.t0, 0));
  const overheadMs = perStage((r) => {
    const c = covered([...r.spans, ...r.waits], t0, t1);
    return Math.max(0, c.last - c.first - c.ms);
  });
  const share = (x: number) => (spanMs > 0 ? x / spanMs : 0);
  const idleShare = busyMs.map((b, i) => share(spanMs - b - overheadMs[i]!));
  return { spanMs, busyMs, idleShare, overheadShare: overheadMs.map(share), bubbleShare: Math.min(...idleShare) };
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
