import { expect, it } from 'vitest';
import { formulaBubble, measuredBubble, projectedBubble1F1B } from '../../../src/parallel/pipeline-bubble.ts';
import type { PassSpan } from '../../../src/parallel/pipeline-step.ts';

const span = (pass: PassSpan['pass'], t0: number, t1: number): PassSpan => ({ pass, microBatch: 0, chunk: 0, t0, t1 });

it("measures each stage's waiting share of the step from its passes and receives (mean over its TP ranks)", () => {
  // p = 2, m = 1, step [0, 5): stage 0 F [0, 1), its receive of the gradient [1.5, 3), B [3, 5): the gap
  // [1, 1.5) is the executor's (overhead), the receive a wait. Stage 1 waits for its input [·, 1) (the
  // part before the step's start is not the step's), then F and B on two TP ranks, one slower; after B it waits.
  const wait = (t0: number, t1: number) => ({ t0, t1 });
  const b = measuredBubble(2, [
    { stage: 0, spans: [span('F', 0, 1), span('B', 3, 5)], waits: [wait(1.5, 3)] },
    { stage: 1, spans: [span('F', 1, 2), span('B', 2, 3)], waits: [wait(0, 1)] },
    { stage: 1, spans: [span('F', 1, 2.5), span('B', 2.5, 3.5)], waits: [wait(-1, 1)] },
  ]);
  expect(b.spanMs).toBe(5);
  expect(b.busyMs).toEqual([3, 2.25]);
  expect(b.idleShare).toEqual([1.5 / 5, (3 / 5 + 2.5 / 5) / 2]);
  expect(b.overheadShare).toEqual([0.5 / 5, 0]);
  expect(b.bubbleShare).toBe(1.5 / 5);
  // Without the receive, stage 0's whole gap [1, 3) is between passes: overhead, none of it bubble.
  const none = measuredBubble(2, [{ stage: 0, spans: [span('F', 0, 1), span('B', 3, 5)], waits: [] }]);
  expect(none.idleShare[0]).toBe(0);
  expect(none.overheadShare[0]).toBe(2 / 5);
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
