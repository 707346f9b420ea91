import { describe, expect, it } from 'vitest';
import { heldPeaks, stageClassBytes, stageHeld } from '../../../src/mesh/pipeline-memory.ts';
import { formatPasses, type PipelineScheduleName } from '../../../src/mesh/pipeline-schedules.ts';

const counts = (s: PipelineScheduleName, p: number, stage: number, m = 4) => {
  const held = stageHeld(s, { p, v: 1, m }, stage);
  return {
    order: formatPasses(held.map((h) => h.pass)),
    inFlight: held.map((h) => h.inFlight[0]).join(' '),
    deferredW: held.map((h) => h.deferredW[0]).join(' '),
  };
};

// Hand-counted from each order: F adds a micro-batch in flight, B takes it off (and, under ZB-H1,
// leaves it waiting for its W), W ends the wait.
describe('what a stage holds after each pass, counted from the order', () => {
  it('1F1B, p 2, m 4: stage 0 holds p = 2 micro-batches at its peak, stage 1 one', () => {
    expect(counts('1f1b', 2, 0)).toEqual({
      order: 'F0 F1 B0 F2 B1 F3 B2 B3',
      inFlight: '1 2 1 2 1 2 1 0',
      deferredW: '0 0 0 0 0 0 0 0',
    });
    expect(counts('1f1b', 2, 1).inFlight).toBe('1 0 1 0 1 0 1 0');
  });

  it('1F1B, p 4, m 4: stage i holds min(p − i, m) at its peak (stage 0: all four)', () => {
    expect(counts('1f1b', 4, 0)).toMatchObject({ order: 'F0 F1 F2 F3 B0 B1 B2 B3', inFlight: '1 2 3 4 3 2 1 0' });
    expect(counts('1f1b', 4, 1)).toMatchObject({ order: 'F0 F1 F2 B0 F3 B1 B2 B3', inFlight: '1 2 3 2 3 2 1 0' });
    const peaks = [0, 1, 2, 3].map((i) => heldPeaks(stageHeld('1f1b', { p: 4, v: 1, m: 4 }, i)));
    expect(peaks).toEqual([4, 3, 2, 1].map((n) => ({ inFlight: n, deferredW: 0 })));
  });

  it('ZB-H1, p 2, m 4: 1F1B’s in-flight activations, and up to i + 1 backwards waiting for W on stage i', () => {
    expect(counts('zb-h1', 2, 0)).toEqual({
      order: 'F0 F1 B0 W0 F2 B1 W1 F3 B2 W2 B3 W3',
      inFlight: '1 2 1 1 2 1 1 2 1 1 0 0',
      deferredW: '0 0 1 0 0 1 0 0 1 0 1 0',
    });
    expect(counts('zb-h1', 2, 1)).toEqual({
      order: 'F0 B0 F1 B1 W0 F2 B2 W1 F3 B3 W2 W3',
      inFlight: '1 0 1 0 0 1 0 0 1 0 0 0',
      deferredW: '0 1 1 2 1 1 2 1 1 2 1 0',
    });
  });

  it('ZB-H1, p 4, m 4: in flight as 1F1B (4, 3, 2, 1); waiting for W 1, 2, 3, 4', () => {
    const peaks = [0, 1, 2, 3].map((i) => heldPeaks(stageHeld('zb-h1', { p: 4, v: 1, m: 4 }, i)));
    expect(peaks).toEqual([0, 1, 2, 3].map((i) => ({ inFlight: 4 - i, deferredW: i + 1 })));
    expect(counts('zb-h1', 4, 3)).toMatchObject({
      order: 'F0 B0 F1 B1 F2 B2 F3 B3 W0 W1 W2 W3',
      deferredW: '0 1 1 2 2 3 3 4 3 2 1 0',
    });
  });

  it('counted F to W as Qi et al. do, every ZB-H1 stage holds at most p micro-batches; stage 0 exactly p, as under 1F1B', () => {
    for (const [p, m] of [
      [2, 4],
      [4, 4],
      [4, 8],
    ] as const) {
      const most = Array.from({ length: p }, (_, i) =>
        Math.max(...stageHeld('zb-h1', { p, v: 1, m }, i).map((h) => h.inFlight[0]! + h.deferredW[0]!)),
      );
      expect(most[0], `p ${p}, m ${m}`).toBe(p);
      for (const n of most) expect(n, `p ${p}, m ${m}: ${most.join(' ')}`).toBeLessThanOrEqual(p);
    }
  });

  it('the gradient sums exist after the first whole backward, or under ZB-H1 the first W', () => {
    expect(stageHeld('1f1b', { p: 2, v: 1, m: 4 }, 0).map((h) => h.gradients)).toEqual([
      false,
      false,
      true,
      true,
      true,
      true,
      true,
      true,
    ]);
    expect(stageHeld('zb-h1', { p: 2, v: 1, m: 4 }, 1).findIndex((h) => h.gradients)).toBe(4); // W0
  });

  it('interleaved counts each chunk apart', () => {
    const held = stageHeld('interleaved', { p: 2, v: 2, m: 4 }, 0);
    expect(held.at(-1)!.inFlight).toEqual([0, 0]);
    // Warm-up (p − 1 − 0)·2 + (v − 1)·p = 4 forwards: chunk 0 of micro-batches 0, 1, then chunk 1 of 0, 1.
    expect(held[3]!.inFlight).toEqual([2, 2]);
  });

  it('bytes: the counts times each unit, weights always, gradients once they exist', () => {
    const held = stageHeld('zb-h1', { p: 2, v: 1, m: 4 }, 1);
    const bytes = stageClassBytes(held, {
      weights: 100,
      gradients: 100,
      savedPerMicroBatch: () => 10,
      deferredPerMicroBatch: () => 7,
    });
    expect(bytes[3]).toEqual({ weights: 100, gradients: 0, activations: 0, deferredW: 14, staging: 0, workspace: 0 });
    expect(bytes[5]).toEqual({ weights: 100, gradients: 100, activations: 10, deferredW: 7, staging: 0, workspace: 0 });
  });
});
