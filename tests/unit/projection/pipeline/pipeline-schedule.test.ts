import { describe, expect, it } from 'vitest';
import { simulatePipeline, stageOrder } from '../../../../src/projection/pipeline/pipeline-schedule.ts';
import { holdsEmbedding, holdsOutput, splitLayers } from '../../../../src/mesh/pipeline-split.ts';

/** Equal stages: forward 1 ms, backward 2 ms per micro-batch per stage (split over v chunks). */
const equal = (p: number, v: number, m: number, p2pMs = 0) =>
  simulatePipeline({ p, v, m, forwardMs: () => 1 / v, backwardMs: () => 2 / v, p2pMs });

describe('the 1F1B schedule', () => {
  it('orders stage i as Megatron does: p − i − 1 warm-up forwards, 1F1B pairs, cool-down backwards', () => {
    const order = (i: number) =>
      stageOrder(4, 1, 6, i)
        .map((x) => `${x.pass[0]}${x.microBatch}`)
        .join(' ');
    expect(order(0)).toBe('f0 f1 f2 f3 b0 f4 b1 f5 b2 b3 b4 b5');
    expect(order(3)).toBe('f0 b0 f1 b1 f2 b2 f3 b3 f4 b4 f5 b5');
  });

  it('has the bubble (p − 1)/m and span (m + p − 1)(tf + tb) with equal stages', () => {
    for (const [p, m] of [
      [4, 8],
      [8, 1],
      [8, 16],
      [2, 3],
    ] as const) {
      const r = equal(p, 1, m);
      expect(r.spanMs).toBeCloseTo((m + p - 1) * 3, 9);
      expect(r.bubbleRatio).toBeCloseTo((p - 1) / m, 9);
      expect(r.bubbleShare).toBeCloseTo((p - 1) / (m + p - 1), 9);
    }
    // The seeds' PP8 with one micro-batch: 7/8 of the step idle.
    expect(equal(8, 1, 1).bubbleShare).toBeCloseTo(0.875, 9);
  });

  it('holds min(p − i, m) micro-batches in flight on stage i', () => {
    expect(equal(4, 1, 8).inFlight).toEqual([4, 3, 2, 1]);
    expect(equal(4, 1, 2).inFlight).toEqual([2, 2, 2, 1]);
  });

  it('sends the activation and its gradient across each boundary: 2·m·(p − 1) sends, each on the critical path when alone', () => {
    const r = equal(4, 1, 1, 0.5);
    expect(r.p2pSends).toBe(6);
    // One micro-batch walks 4 forwards, 4 backwards and 6 sends in series.
    expect(r.spanMs).toBeCloseTo(4 * 3 + 6 * 0.5, 9);
  });

  it('is m back-to-back forward/backward pairs without pipelining', () => {
    const r = equal(1, 1, 5);
    expect(r.spanMs).toBeCloseTo(15, 9);
    expect(r.bubbleShare).toBe(0);
    expect(r.p2pSends).toBe(0);
  });
});

describe('the interleaved schedule', () => {
  it('follows get_schedule_table: chunk 0 of micro-batches 0..p−1, then chunk 1 of the same', () => {
    const f = stageOrder(2, 2, 4, 1)
      .filter((x) => x.pass === 'forward')
      .map((x) => `${x.microBatch}.${x.chunk}`);
    expect(f).toEqual(['0.0', '1.0', '0.1', '1.1', '2.0', '3.0', '2.1', '3.1']);
  });

  it('has the bubble (p − 1)/(v·m) with equal stages', () => {
    for (const [p, v, m] of [
      [4, 2, 8],
      [4, 4, 8],
      [2, 2, 4],
      [8, 2, 16],
    ] as const) {
      const r = equal(p, v, m);
      expect(r.bubbleRatio).toBeCloseTo((p - 1) / (v * m), 9);
      expect(r.p2pSends).toBe(2 * m * (p * v - 1));
    }
  });

  it('keeps (p − i − 1)·2 + (v − 1)·p + 1 chunks in flight on stage i', () => {
    // p = 4, v = 2, m = 8: warm-up 10, 8, 6, 4 forwards, then one more before the first backward.
    expect(equal(4, 2, 8).inFlight).toEqual([11, 9, 7, 5]);
  });

  it('rejects m that is not a multiple of p', () => {
    expect(() => equal(4, 2, 6)).toThrow(/multiple of p = 4/);
  });
});

describe('splitLayers', () => {
  it('splits evenly, or with Megatron’s uneven first and last stage', () => {
    expect(splitLayers(8, 4, 1).layers).toEqual([[2], [2], [2], [2]]);
    expect(splitLayers(8, 2, 2).layers).toEqual([
      [2, 2],
      [2, 2],
    ]);
    expect(splitLayers(10, 8, 1, { first: 2, last: 2 }).layers.map((r) => r[0])).toEqual([2, 1, 1, 1, 1, 1, 1, 2]);
    expect(() => splitLayers(10, 8, 1)).toThrow(/divide evenly over p = 8/);
    expect(() => splitLayers(10, 8, 1, { first: 1, last: 1 })).toThrow(
      /remaining 8 layers must divide evenly over the 6/,
    );
  });

  it('puts the embedding on the first virtual stage and the output on the last', () => {
    const s = splitLayers(8, 2, 2);
    expect(holdsEmbedding(0, 0)).toBe(true);
    expect(holdsEmbedding(0, 1)).toBe(false);
    expect(holdsOutput(s, 1, 1)).toBe(true);
    expect(holdsOutput(s, 1, 0)).toBe(false);
  });
});
