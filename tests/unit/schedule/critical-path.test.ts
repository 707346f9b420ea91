import { describe, expect, test } from 'vitest';
import { interconnectPresets } from '../../../src/hardware/interconnect.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { makePlan } from '../../../src/parallel/plan.ts';
import { criticalPath } from '../../../src/schedule/critical-path.ts';
import { modeledCommMs } from '../../../src/schedule/durations.ts';
import { scheduleStep } from '../../../src/schedule/schedule.ts';
import { durations, tinyPlan } from './tiny-plan.ts';

const names = ['a.gemm', 'x.reduce', 'b.gemm', 'y.reduce', 'c.gemm'];
const seg = (s: { rank: number; op: string; kind: string; t0: number; t1: number }) => [
  s.rank,
  s.op,
  s.kind,
  s.t0,
  s.t1,
];

describe('the critical path of a step', () => {
  test('on two ranks it runs through the slow rank’s op and shows the fast rank’s wait', () => {
    const plan = tinyPlan(2, names);
    // Rank 1 is slow on a, rank 0 on c: a [0,3] on rank 1 sets the first reduce; c [6,9] on rank 0 ends the step.
    const tl = scheduleStep(
      plan,
      durations(plan, [
        [1, 1, 1, 1, 3],
        [3, 1, 1, 1, 1],
      ]),
      { overlap: false },
    );
    const p = criticalPath(tl);
    expect(p.endRank).toBe(0);
    expect(p.segments.map(seg)).toEqual([
      [1, 'a.gemm', 'compute', 0, 3],
      [0, 'x.reduce', 'comm', 3, 4],
      [0, 'b.gemm', 'compute', 4, 5],
      [0, 'y.reduce', 'comm', 5, 6],
      [0, 'c.gemm', 'compute', 6, 9],
    ]);
    expect(p.waits).toEqual([{ rank: 0, opIndex: 1, op: 'x.reduce', t0: 1, t1: 3, slowRank: 1 }]);
  });

  test('its segments tile the step: they touch, start at 0 and add up to the step time', () => {
    const plan = tinyPlan(3, names);
    const tl = scheduleStep(
      plan,
      durations(plan, [
        [1, 2, 3, 1, 1],
        [2, 2, 1, 1, 4],
        [3, 2, 2, 1, 1],
      ]),
      { overlap: false },
    );
    const p = criticalPath(tl);
    expect(p.segments[0]!.t0).toBe(0);
    p.segments.slice(1).forEach((s, i) => expect(s.t0).toBe(p.segments[i]!.t1));
    expect(p.computeMs + p.commMs).toBe(tl.stepMs);
  });

  test('a rank that arrives last at a collective keeps the path on itself', () => {
    const plan = tinyPlan(2, names);
    const tl = scheduleStep(
      plan,
      durations(plan, [
        [1, 1, 1, 1, 1],
        [3, 1, 1, 1, 2],
      ]),
      { overlap: false },
    );
    const p = criticalPath(tl);
    expect(new Set(p.segments.map((s) => s.rank))).toEqual(new Set([1]));
    expect(p.waits).toEqual([]);
  });

  test('with overlap the path skips a dgrad reduce that the wgrad GEMMs hide', () => {
    const plan = tinyPlan(1, ['x.dgrad', 'x.dgrad.reduce', 'x.wgrad', 'next.backward']);
    const tl = scheduleStep(plan, durations(plan, [[1, 1, 4, 1]]), { overlap: true });
    expect(criticalPath(tl).segments.map((s) => s.op)).toEqual(['x.dgrad', 'x.wgrad', 'next.backward']);
  });

  test('with overlap the path runs through a dgrad reduce that outlasts the wgrad GEMMs', () => {
    const plan = tinyPlan(1, ['x.dgrad', 'x.dgrad.reduce', 'x.wgrad', 'next.backward']);
    const tl = scheduleStep(plan, durations(plan, [[1, 5, 1, 1]]), { overlap: true });
    expect(criticalPath(tl).segments.map((s) => s.op)).toEqual(['x.dgrad', 'x.dgrad.reduce', 'next.backward']);
  });

  test('on the real layer with uneven ranks and overlap the path still tiles the whole step', async () => {
    const { plan } = await makePlan(configFromPreset('llama-gqa', { tp: 4, sp: true }));
    const computeMs = plan.ranks.map(({ rank }) =>
      plan.ops.map((op) => (op.kind === 'collective' ? 0 : 0.01 * (1 + ((op.index * (rank + 3)) % 5)))),
    );
    const tl = scheduleStep(
      plan,
      { computeMs, commMs: modeledCommMs(plan, interconnectPresets['nvlink-a100']) },
      { overlap: true },
    );
    const p = criticalPath(tl);
    expect(p.segments[0]!.t0).toBe(0);
    p.segments.slice(1).forEach((s, i) => expect(s.t0).toBe(p.segments[i]!.t1));
    expect(p.segments.at(-1)!.t1).toBe(tl.stepMs);
    expect(p.waits.length).toBeGreaterThan(0);
  });
});
