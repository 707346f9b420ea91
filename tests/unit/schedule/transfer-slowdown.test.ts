import { describe, expect, test } from 'vitest';
import { scheduleStep } from '../../../src/schedule/schedule.ts';
import {
  kernelSlowdowns,
  medianOverRanks,
  scheduleUnderTransfer,
  slowdownByGroup,
  slowedPart,
  underTransfer,
  type TransferTimes,
} from '../../../src/schedule/transfer-slowdown.ts';
import { tinyPlan } from './tiny-plan.ts';

// fwd GEMM, dgrad GEMM, its async all-reduce, the wgrad GEMM that may run under it, a kernel after.
const plan = tinyPlan(2, ['a.gemm', 'x.dgrad', 'x.dgrad.reduce', 'x.wgrad', 'y.add']);
const both = <T>(row: T[]): T[][] => [row, [...row]];
// ms per op index; the collective's entries are ignored.
const times: TransferTimes = {
  pairs: 2,
  aloneMs: both([1, 1, 0, 2, 1]),
  overlappedMs: both([1.1, 1, 0, 3, 1]),
  stepWallMs: { aloneMs: 5, overlappedMs: 7 },
};
const commMs = both([0, 0, 3, 0, 0]);

describe('kernels under a transfer', () => {
  test('with the async dgrad all-reduce the wgrad GEMM runs under its transfer, nothing else does', () => {
    const tl = scheduleStep(plan, { computeMs: times.aloneMs, commMs }, { overlap: true });
    expect(underTransfer(tl)).toEqual(both([false, false, false, true, false]));
  });

  test('without overlap the all-reduce holds the compute stream: no kernel is under a transfer', () => {
    const tl = scheduleStep(plan, { computeMs: times.aloneMs, commMs }, { overlap: false });
    expect(underTransfer(tl)).toEqual(both([false, false, false, false, false]));
    const slowed = scheduleUnderTransfer(plan, times, commMs, { overlap: false });
    expect(slowed.events.filter((e) => e.transfer)).toEqual([]);
    expect(slowed.stepMs).toBe(1 + 1 + 3 + 2 + 1);
  });

  test('the slowed kernel takes its time under transfer, carries both, and its extra is the end of its block', () => {
    const tl = scheduleUnderTransfer(plan, times, commMs, { overlap: true });
    const wgrad = tl.events.filter((e) => e.op === 'x.wgrad');
    expect(wgrad.map((e) => [e.t0, e.t1])).toEqual([
      [2, 5],
      [2, 5],
    ]);
    expect(wgrad[0]!.transfer).toEqual({ aloneMs: 2, overlappedMs: 3 });
    expect(slowedPart(wgrad[0]!)).toEqual({ t0: 4, t1: 5 });
    // a.gemm is not under a transfer: it keeps its time alone (1, not 1.1) and carries nothing.
    const a = tl.events.find((e) => e.op === 'a.gemm' && e.rank === 0)!;
    expect([a.t1, a.transfer]).toEqual([1, undefined]);
    // y starts when both the wgrad (5) and the all-reduce (5) have ended.
    expect(tl.stepMs).toBe(6);
  });

  test('a kernel no slower under transfer (noise) has no slowed part', () => {
    const faster = { ...times, overlappedMs: both([1, 1, 0, 1.5, 1]) };
    const tl = scheduleUnderTransfer(plan, faster, commMs, { overlap: true });
    const wgrad = tl.events.find((e) => e.op === 'x.wgrad')!;
    expect(wgrad.transfer).toEqual({ aloneMs: 2, overlappedMs: 1.5 });
    expect(slowedPart(wgrad)).toBeNull();
  });

  test('per kernel: both times, whether under transfer, the ratio; grouped: under transfer against the rest', () => {
    const tl = scheduleUnderTransfer(plan, times, commMs, { overlap: true });
    const rows = kernelSlowdowns(plan, times, tl);
    expect(rows).toHaveLength(2 * 4);
    const w = rows.find((r) => r.rank === 1 && r.op === 'x.wgrad')!;
    expect([w.aloneMs, w.overlappedMs, w.underTransfer, w.slowdown]).toEqual([2, 3, true, 1.5]);
    const g = slowdownByGroup(rows);
    expect(g.underTransfer).toBe(1.5);
    expect(g.others).toBeCloseTo(3.1 / 3, 12);
  });

  test("the schedule's times are each op's median over the ranks: the ranks' differences are noise, not a straggler", () => {
    const three = { ...times, aloneMs: [[1], [3], [2]], overlappedMs: [[5], [4], [9]] };
    const m = medianOverRanks(three);
    expect([m.aloneMs, m.overlappedMs]).toEqual([
      [[2], [2], [2]],
      [[5], [5], [5]],
    ]);
    expect(m.stepWallMs).toBe(three.stepWallMs);
  });
});
