import { expect, it } from 'vitest';
import { formulaBubble, measuredBubble, projectedBubble1F1B } from '../../../src/parallel/pipeline-bubble.ts';
import type { PassSpan } from '../../../src/parallel/pipeline-step.ts';

const span = (pass: PassSpan['pass'], t0: number, t1: number): PassSpan => ({ pass, microBatch: 0, chunk: 0, t0, t1 });

it("measures each stage's idle share of the step from its passes (mean over its TP ranks)", () => {
  // p = 2, m = 1: stage 0 F [0, 1), B [3, 5); stage 1 F [1, 2), B [2, 3) on both TP ranks, one of them slower.
  const b = measuredBubble(2, [
    { stage: 0, spans: [span('F', 0, 1), span('B', 3, 5)] },
    { stage: 1, spans: [span('F', 1, 2), span('B', 2, 3)] },
    { stage: 1, spans: [span('F', 1, 2.5), span('B', 2.5, 3.5)] },
  ]);
  expect(b.spanMs).toBe(5);
  expect(b.busyMs).toEqual([3, 2.25]);
  expect(b.idleShare).toEqual([0.4, 0.55]);
  expect(b.bubbleShare).toBe(0.4);
  expect(() => measuredBubble(2, [])).toThrow(/no passes/);
});

it("1F1B's projected bubble: the seeds' PP8 with one micro-batch idles 7/8 of the step", () => {
  expect(projectedBubble1F1B(8, 1)).toBe(0.875);
  expect(projectedBubble1F1B(4, 4)).toBeCloseTo(3 / 7, 12);
});

it("each schedule's textbook bubble: interleaving divides the warm-up by v, ZB-H1 fills two thirds of 1F1B's", () => {
  expect(formulaBubble('afab', 4, 1, 4)).toBe(formulaBubble('1f1b', 4, 1, 4));
  expect(formulaBubble('interleaved', 4, 2, 4)).toBeCloseTo(3 / 11, 12);
  // (p − 1) T idle beside 3 m T busy: p 2, m 4 → 1/13, a third of 1F1B's bubble time (3 T).
  expect(formulaBubble('zb-h1', 2, 1, 4)).toBeCloseTo(1 / 13, 12);
});
