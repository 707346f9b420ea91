import { describe, expect, test } from 'vitest';
import { exposedComm, type TimedSlice } from '../../../src/schedule/exposed.ts';
import { intersectIntervals, subtractIntervals, totalLength, unionIntervals } from '../../../src/schedule/intervals.ts';

const iv = (t0: number, t1: number) => ({ t0, t1 });
const comm = (rank: number, t0: number, t1: number): TimedSlice => ({ rank, stream: 'comm', t0, t1 });
const compute = (rank: number, t0: number, t1: number): TimedSlice => ({ rank, stream: 'compute', t0, t1 });

describe('interval union', () => {
  test('the union of nothing is empty', () => {
    expect(unionIntervals([])).toEqual([]);
  });
  test('touching intervals merge into one', () => {
    expect(unionIntervals([iv(2, 3), iv(0, 2)])).toEqual([iv(0, 3)]);
  });
  test('a nested interval disappears into its container', () => {
    expect(unionIntervals([iv(0, 10), iv(2, 3)])).toEqual([iv(0, 10)]);
  });
  test('disjoint intervals stay apart and come out sorted', () => {
    expect(unionIntervals([iv(5, 6), iv(0, 1)])).toEqual([iv(0, 1), iv(5, 6)]);
  });
  test('empty and reversed intervals are dropped', () => {
    expect(unionIntervals([iv(1, 1), iv(3, 2), iv(4, 5)])).toEqual([iv(4, 5)]);
  });
  test('the total length of a union counts overlaps once', () => {
    expect(totalLength(unionIntervals([iv(0, 4), iv(2, 6)]))).toBe(6);
  });
});

describe('interval difference', () => {
  test('subtracting nothing leaves the union', () => {
    expect(subtractIntervals([iv(0, 2), iv(1, 3)], [])).toEqual([iv(0, 3)]);
  });
  test('subtracting from nothing leaves nothing', () => {
    expect(subtractIntervals([], [iv(0, 2)])).toEqual([]);
  });
  test('a nested cut splits an interval in two', () => {
    expect(subtractIntervals([iv(0, 10)], [iv(3, 4)])).toEqual([iv(0, 3), iv(4, 10)]);
  });
  test('a cover removes the interval entirely', () => {
    expect(subtractIntervals([iv(3, 4)], [iv(0, 10)])).toEqual([]);
  });
  test('touching cuts remove nothing', () => {
    expect(subtractIntervals([iv(2, 5)], [iv(0, 2), iv(5, 9)])).toEqual([iv(2, 5)]);
  });
  test('several cuts across several intervals leave the gaps', () => {
    expect(subtractIntervals([iv(0, 4), iv(6, 10)], [iv(1, 2), iv(3, 7), iv(9, 12)])).toEqual([
      iv(0, 1),
      iv(2, 3),
      iv(7, 9),
    ]);
  });
  test('the intersection is what the difference removes', () => {
    expect(intersectIntervals([iv(0, 4), iv(6, 10)], [iv(3, 7)])).toEqual([iv(3, 4), iv(6, 7)]);
  });
});

describe('exposed communication per rank', () => {
  test('communication fully inside compute is not exposed', () => {
    const [r] = exposedComm([compute(0, 0, 10), comm(0, 2, 5)]);
    expect(r).toMatchObject({ rank: 0, commMs: 3, computeMs: 10, exposedMs: 0, exposed: [] });
  });
  test('communication that no compute overlaps is exposed whole', () => {
    const [r] = exposedComm([compute(0, 0, 2), comm(0, 2, 5), compute(0, 5, 6)]);
    expect(r).toMatchObject({ commMs: 3, exposedMs: 3, exposed: [iv(2, 5)] });
  });
  test('partly overlapped communication exposes only the uncovered part', () => {
    const [r] = exposedComm([compute(0, 0, 3), comm(0, 2, 6), compute(0, 5, 8)]);
    expect(r!.exposed).toEqual([iv(3, 5)]);
    expect(r!.exposedMs).toBe(2);
  });
  test('each rank is measured against its own compute only', () => {
    const out = exposedComm([compute(1, 0, 10), comm(0, 2, 5), comm(1, 2, 5)]);
    expect(out.map((r) => [r.rank, r.exposedMs])).toEqual([
      [0, 3],
      [1, 0],
    ]);
  });
  test('a trace without comm events has no exposed time', () => {
    expect(exposedComm([compute(0, 0, 1), compute(0, 1, 2)])).toEqual([
      { rank: 0, computeMs: 2, commMs: 0, exposedMs: 0, exposed: [] },
    ]);
  });
});
