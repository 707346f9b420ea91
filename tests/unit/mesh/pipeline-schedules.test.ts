import { describe, expect, it } from 'vitest';
import {
  formatPasses,
  pipelinePasses,
  pipelineScheduleNames,
  stagePasses,
  type PipelineScheduleName,
  type ScheduledPass,
} from '../../../src/mesh/pipeline-schedules.ts';

const orders = (s: PipelineScheduleName, p: number, m: number, v = 1): string[] =>
  pipelinePasses(s, { p, v, m }).map((o) => formatPasses(o, v));

// Every expected order below is written by hand from the schedule's rule (stated above each block),
// not printed by the code under test.

describe('all-forward-all-backward', () => {
  // Every stage: F0 … F(m−1), then B0 … B(m−1).
  it('p = 2 and 4, m = 4 and 8', () => {
    const four = 'F0 F1 F2 F3 B0 B1 B2 B3';
    const eight = 'F0 F1 F2 F3 F4 F5 F6 F7 B0 B1 B2 B3 B4 B5 B6 B7';
    expect(orders('afab', 2, 4)).toEqual([four, four]);
    expect(orders('afab', 2, 8)).toEqual([eight, eight]);
    expect(orders('afab', 4, 4)).toEqual([four, four, four, four]);
    expect(orders('afab', 4, 8)).toEqual([eight, eight, eight, eight]);
  });
});

describe('1F1B', () => {
  // Stage i: p − i − 1 warm-up forwards, then (F, B) pairs, then the cool-down backwards.
  it('p = 2, m = 4 and 8', () => {
    expect(orders('1f1b', 2, 4)).toEqual(['F0 F1 B0 F2 B1 F3 B2 B3', 'F0 B0 F1 B1 F2 B2 F3 B3']);
    expect(orders('1f1b', 2, 8)).toEqual([
      'F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7',
      'F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7',
    ]);
  });
  it('p = 4, m = 4 and 8', () => {
    expect(orders('1f1b', 4, 4)).toEqual([
      'F0 F1 F2 F3 B0 B1 B2 B3',
      'F0 F1 F2 B0 F3 B1 B2 B3',
      'F0 F1 B0 F2 B1 F3 B2 B3',
      'F0 B0 F1 B1 F2 B2 F3 B3',
    ]);
    expect(orders('1f1b', 4, 8)).toEqual([
      'F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7',
      'F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7',
      'F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7',
      'F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7',
    ]);
  });
});

describe('interleaved 1F1B, v = 2', () => {
  // get_schedule_table with groups of p micro-batches: chunk 0 of a group, then chunk 1 of it.
  // Stage i: (p − i − 1)·2 + p warm-up forwards, then pairs (the next forward, the backward of the
  // table's next entry with its chunk mirrored), then the remaining backwards. F3.1: micro-batch 3, chunk 1.
  it('p = 2, m = 4 and 8', () => {
    expect(orders('interleaved', 2, 4, 2)).toEqual([
      'F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0',
      'F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0',
    ]);
    expect(orders('interleaved', 2, 8, 2)).toEqual([
      'F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 F4.0 B2.1 F5.0 B3.1 ' +
        'F4.1 B2.0 F5.1 B3.0 F6.0 B4.1 F7.0 B5.1 F6.1 B4.0 F7.1 B5.0 B6.1 B7.1 B6.0 B7.0',
      'F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 F4.0 B2.0 ' +
        'F5.0 B3.0 F4.1 B4.1 F5.1 B5.1 F6.0 B4.0 F7.0 B5.0 F6.1 B6.1 F7.1 B7.1 B6.0 B7.0',
    ]);
  });
  it('p = 4, m = 4 and 8', () => {
    // m = 4 = p: one group; stages 0 and 1 (warm-up 14 and 12 ≥ m·v = 8) run every forward first.
    const allFirst = 'F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 B0.1 B1.1 B2.1 B3.1 B0.0 B1.0 B2.0 B3.0';
    expect(orders('interleaved', 4, 4, 2)).toEqual([
      allFirst,
      allFirst,
      'F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 B0.1 F3.1 B1.1 B2.1 B3.1 B0.0 B1.0 B2.0 B3.0',
      'F0.0 F1.0 F2.0 F3.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 B0.0 B1.0 B2.0 B3.0',
    ]);
    expect(orders('interleaved', 4, 8, 2)).toEqual([
      'F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F4.0 F5.0 F6.0 B0.1 F7.0 B1.1 F4.1 B2.1 ' +
        'F5.1 B3.1 F6.1 B0.0 F7.1 B1.0 B2.0 B3.0 B4.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0',
      'F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F4.0 B0.1 F5.0 B1.1 F6.0 B2.1 F7.0 B3.1 ' +
        'F4.1 B0.0 F5.1 B1.0 F6.1 B2.0 F7.1 B3.0 B4.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0',
      'F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 B0.1 F3.1 B1.1 F4.0 B2.1 F5.0 B3.1 F6.0 B0.0 ' +
        'F7.0 B1.0 F4.1 B2.0 F5.1 B3.0 F6.1 B4.1 F7.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0',
      'F0.0 F1.0 F2.0 F3.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 F4.0 B0.0 F5.0 B1.0 ' +
        'F6.0 B2.0 F7.0 B3.0 F4.1 B4.1 F5.1 B5.1 F6.1 B6.1 F7.1 B7.1 B4.0 B5.0 B6.0 B7.0',
    ]);
  });

  it("refuses m that Megatron's rule refuses, naming the rule and the legal values", () => {
    expect(() => stagePasses('interleaved', { p: 4, v: 2, m: 6 }, 0)).toThrow(
      /multiple of p = 4.*m mod p = 2.*Legal m: 4, 8, 12, 16/,
    );
    expect(() => stagePasses('interleaved', { p: 4, v: 2, m: 2 }, 0)).toThrow(
      /must lie in \[p, m\], and m = 2 < p.*Legal m: 4, 8/,
    );
    expect(() => stagePasses('interleaved', { p: 2, v: 1, m: 4 }, 0)).toThrow(/needs v ≥ 2.*use 1f1b/);
    expect(() => stagePasses('1f1b', { p: 2, v: 2, m: 4 }, 0)).toThrow(/one model chunk per stage/);
    expect(() => stagePasses('zb-h1', { p: 2, v: 1, m: 0 }, 0)).toThrow(/m must be a whole number ≥ 1/);
  });
});

describe('ZB-H1', () => {
  // Step x = 0 … m + p − 2 on stage i: F_x, B_{x−(p−1−i)}, W_{x−(p−1)}, each only when in [0, m).
  it('p = 2, m = 4 and 8', () => {
    expect(orders('zb-h1', 2, 4)).toEqual([
      'F0 F1 B0 W0 F2 B1 W1 F3 B2 W2 B3 W3',
      'F0 B0 F1 B1 W0 F2 B2 W1 F3 B3 W2 W3',
    ]);
    expect(orders('zb-h1', 2, 8)).toEqual([
      'F0 F1 B0 W0 F2 B1 W1 F3 B2 W2 F4 B3 W3 F5 B4 W4 F6 B5 W5 F7 B6 W6 B7 W7',
      'F0 B0 F1 B1 W0 F2 B2 W1 F3 B3 W2 F4 B4 W3 F5 B5 W4 F6 B6 W5 F7 B7 W6 W7',
    ]);
  });
  it('p = 4, m = 4 and 8', () => {
    expect(orders('zb-h1', 4, 4)).toEqual([
      'F0 F1 F2 F3 B0 W0 B1 W1 B2 W2 B3 W3',
      'F0 F1 F2 B0 F3 B1 W0 B2 W1 B3 W2 W3',
      'F0 F1 B0 F2 B1 F3 B2 W0 B3 W1 W2 W3',
      'F0 B0 F1 B1 F2 B2 F3 B3 W0 W1 W2 W3',
    ]);
    expect(orders('zb-h1', 4, 8)).toEqual([
      'F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 B5 W5 B6 W6 B7 W7',
      'F0 F1 F2 B0 F3 B1 W0 F4 B2 W1 F5 B3 W2 F6 B4 W3 F7 B5 W4 B6 W5 B7 W6 W7',
      'F0 F1 B0 F2 B1 F3 B2 W0 F4 B3 W1 F5 B4 W2 F6 B5 W3 F7 B6 W4 B7 W5 W6 W7',
      'F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 W5 W6 W7',
    ]);
  });

  it("keeps 1F1B's order of F and B, hence its activations in flight", () => {
    for (const [p, m] of [
      [2, 4],
      [4, 8],
      [4, 3],
      [8, 16],
    ] as const) {
      const fb = orders('zb-h1', p, m).map((o) => o.replace(/ ?W\d+/g, '').trim());
      expect(fb).toEqual(orders('1f1b', p, m));
    }
  });
});

describe('every schedule', () => {
  const key = (x: ScheduledPass) => `${x.microBatch}.${x.chunk}`;
  it('runs each (micro-batch, chunk) once forward and once backward (and W once), F before B before W', () => {
    for (const s of pipelineScheduleNames)
      for (const [p, m] of [
        [1, 3],
        [2, 4],
        [4, 8],
        [4, 12],
      ] as const) {
        const v = s === 'interleaved' ? 2 : 1;
        if (s === 'interleaved' && m % p !== 0) continue;
        for (const o of pipelinePasses(s, { p, v, m })) {
          const seen = new Map<string, string>();
          for (const x of o) {
            const before = seen.get(key(x)) ?? '';
            expect(before, `${s} p ${p} m ${m}: ${x.pass} of ${key(x)} after ${before}`).toBe(
              { F: '', B: 'F', W: 'FB' }[x.pass],
            );
            seen.set(key(x), before + x.pass);
          }
          expect(seen.size).toBe(m * v);
          for (const done of seen.values()) expect(done).toBe(s === 'zb-h1' ? 'FBW' : 'FB');
        }
      }
  });
});
