import { describe, expect, test } from 'vitest';
import { scheduleStep } from '../../../src/schedule/schedule.ts';
import { stepStragglers } from '../../../src/schedule/step-stragglers.ts';
import { analyseStragglers, callStraggler, lastEntrant, matchCalls } from '../../../src/schedule/stragglers.ts';
import { durations, tinyPlan } from './tiny-plan.ts';

describe('the straggler of one collective call is the last rank to enter it', () => {
  test('four ranks enter at 1, 2, 7 and 3 ms: rank 2 is the straggler, the others wait until 7', () => {
    const r = callStraggler([
      { rank: 0, t0: 1, t1: 9 },
      { rank: 1, t0: 2, t1: 9 },
      { rank: 2, t0: 7, t1: 9 },
      { rank: 3, t0: 3, t1: 9 },
    ]);
    expect(r).toEqual({
      straggler: 2,
      lastEnterMs: 7,
      lateMs: 6,
      waits: [
        { rank: 0, t0: 1, t1: 7 },
        { rank: 1, t0: 2, t1: 7 },
        { rank: 3, t0: 3, t1: 7 },
      ],
    });
  });

  test('ranks entering together have no straggler; within the tolerance neither', () => {
    const together = [
      { rank: 0, t0: 5, t1: 6 },
      { rank: 1, t0: 5, t1: 6 },
    ];
    expect(callStraggler(together).straggler).toBeNull();
    expect(callStraggler([together[0]!, { rank: 1, t0: 5.01, t1: 6 }], 0.05).straggler).toBeNull();
    expect(callStraggler([together[0]!, { rank: 1, t0: 5.01, t1: 6 }]).straggler).toBe(1);
    expect(callStraggler([together[0]!]).straggler).toBeNull();
    expect(() => callStraggler(together, -1)).toThrow(/toleranceMs is -1; it must be ≥ 0/);
  });

  test('a tie for last goes to the lower rank (the scheduler uses the same rule)', () => {
    expect(lastEntrant([1, 4, 4, 2])).toBe(1);
    expect(
      callStraggler([
        { rank: 0, t0: 1, t1: 5 },
        { rank: 1, t0: 4, t1: 5 },
        { rank: 2, t0: 4, t1: 5 },
      ]).waits,
    ).toEqual([{ rank: 0, t0: 1, t1: 4 }]);
  });
});

describe('the verdict over a window names the rank that made the others wait most', () => {
  test('rank 1 is late into two calls (3 + 2 ms of waiting caused), rank 0 into one (1 ms)', () => {
    const a = analyseStragglers([
      {
        key: 'x',
        entries: [
          { rank: 0, t0: 0, t1: 4 },
          { rank: 1, t0: 3, t1: 4 },
        ],
      },
      {
        key: 'y',
        entries: [
          { rank: 0, t0: 10, t1: 13 },
          { rank: 1, t0: 9, t1: 13 },
        ],
      },
      {
        key: 'z',
        entries: [
          { rank: 0, t0: 20, t1: 23 },
          { rank: 1, t0: 22, t1: 23 },
        ],
      },
    ]);
    expect(a.calls.map((c) => [c.key, c.result.straggler])).toEqual([
      ['x', 1],
      ['y', 0],
      ['z', 1],
    ]);
    expect(a.verdict).toEqual({
      straggler: 1,
      calls: 3,
      callsWithStraggler: 3,
      ranks: [
        { rank: 0, lastIn: 1, causedMs: 1, waitedMs: 5 },
        { rank: 1, lastIn: 2, causedMs: 5, waitedMs: 1 },
      ],
    });
  });

  test('nobody waited: no straggler', () => {
    const a = analyseStragglers([
      {
        key: 0,
        entries: [
          { rank: 0, t0: 0, t1: 1 },
          { rank: 1, t0: 0, t1: 1 },
        ],
      },
    ]);
    expect(a.verdict.straggler).toBeNull();
    expect(a.verdict.callsWithStraggler).toBe(0);
  });
});

describe('pairing collectives into calls', () => {
  test('a rank’s k-th collective of a group is the group’s k-th call, whatever the clock says', () => {
    // Group "tp": rank 1's first call starts after rank 0's second one; group "dp" apart.
    const s = [
      { rank: 0, t0: 0, g: 'tp', id: 'tp0-r0' },
      { rank: 0, t0: 1, g: 'tp', id: 'tp1-r0' },
      { rank: 1, t0: 2, g: 'tp', id: 'tp0-r1' },
      { rank: 0, t0: 3, g: 'dp', id: 'dp0-r0' },
      { rank: 1, t0: 4, g: 'tp', id: 'tp1-r1' },
      { rank: 2, t0: 5, g: 'dp', id: 'dp0-r2' },
    ];
    const calls = matchCalls(
      s,
      (x) => x.rank,
      (x) => x.t0,
      (x) => x.g,
    );
    expect(calls.map((c) => c.map((x) => x.id))).toEqual([
      ['tp0-r0', 'tp0-r1'],
      ['tp1-r0', 'tp1-r1'],
      ['dp0-r0', 'dp0-r2'],
    ]);
  });
});

describe('stragglers of a scheduled step', () => {
  test('rank 2 of four runs its GEMMs 3× slower: it enters both all-reduces last, the others wait inside them', () => {
    const plan = tinyPlan(4, ['a.gemm', 'x.reduce', 'b.gemm', 'y.reduce']);
    const fast = [1, 1, 1, 1];
    const slow = [3, 1, 3, 1];
    const tl = scheduleStep(plan, durations(plan, [fast, fast, slow, fast]), { overlap: false });
    const a = stepStragglers(tl);
    // x.reduce: ranks 0, 1, 3 arrive at 1, rank 2 at 3; transfer [3,4). y.reduce: b ends at 5 on the
    // fast ranks and at 7 on rank 2; transfer [7,8).
    expect(a.calls.map((c) => [c.key.op, c.result.straggler, c.result.lastEnterMs])).toEqual([
      ['x.reduce', 2, 3],
      ['y.reduce', 2, 7],
    ]);
    expect(a.calls[0]!.result.waits).toEqual([
      { rank: 0, t0: 1, t1: 3 },
      { rank: 1, t0: 1, t1: 3 },
      { rank: 3, t0: 1, t1: 3 },
    ]);
    expect(a.verdict.straggler).toBe(2);
    expect(a.verdict.ranks.map((r) => [r.rank, r.lastIn, r.causedMs, r.waitedMs])).toEqual([
      [0, 0, 0, 4],
      [1, 0, 0, 4],
      [2, 2, 12, 0],
      [3, 0, 0, 4],
    ]);
    // The scheduler's own lastArrival (what the critical path follows) names the same rank.
    expect(tl.events.filter((e) => e.stream === 'comm').every((e) => e.lastArrival === 2)).toBe(true);
  });

  test('equal ranks: no straggler', () => {
    const plan = tinyPlan(2, ['a.gemm', 'x.reduce']);
    const tl = scheduleStep(
      plan,
      durations(plan, [
        [1, 1],
        [1, 1],
      ]),
      { overlap: false },
    );
    expect(stepStragglers(tl).verdict.straggler).toBeNull();
  });
});
