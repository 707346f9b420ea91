// The classroom's straggler step as data: which rank it slows, its figure, and — on the classroom
// plan scheduled with that rank's kernels 3× longer — the analysis naming it in every collective.
import { expect, test } from 'vitest';
import { classroomStraggler } from '../../../../src/parallel/classroom.ts';
import { configFromPreset } from '../../../../src/parallel/config.ts';
import { makePlan } from '../../../../src/parallel/plan.ts';
import { scheduleStep } from '../../../../src/schedule/schedule.ts';
import { stepStragglers } from '../../../../src/schedule/step-stragglers.ts';
import { stepWords } from '../../../../src/ui/classroom/classroom-text.ts';

test('the straggler step slows the last rank 3×; at t = 1 there is no one to wait for', () => {
  expect(classroomStraggler(2)).toEqual({ rank: 1, factor: 3 });
  expect(classroomStraggler(4)).toEqual({ rank: 3, factor: 3 });
  expect(classroomStraggler(1)).toBeNull();
  expect(stepWords('straggler', configFromPreset('classroom', { tp: 4 }), true).text).toContain(
    'rank 3 now does 3× the work',
  );
});

test.each([2, 4])(
  'at t = %i, the classroom plan with the slowed rank’s kernels 3× longer: every collective after compute names it the straggler and the others wait inside',
  async (t) => {
    const c = configFromPreset('classroom', { tp: t });
    const { plan } = await makePlan(c);
    const slow = classroomStraggler(t)!;
    // Every compute op 1 ms (3 ms on the slowed rank: it dispatches each kernel 3 times), every transfer 0.5 ms.
    const computeMs = plan.ranks.map(({ rank }) => plan.ops.map(() => (rank === slow.rank ? slow.factor : 1)));
    const commMs = plan.ranks.map(() => plan.ops.map(() => 0.5));
    const tl = scheduleStep(plan, { computeMs, commMs }, { overlap: true });
    const a = stepStragglers(tl);
    const collectives = plan.ops.filter((o) => o.kind === 'collective');
    expect(collectives.length).toBeGreaterThan(0);
    expect(a.calls.map((k) => k.key.opIndex)).toEqual(collectives.map((o) => o.index));
    for (const call of a.calls) {
      // A collective right after another one (no kernel between: the ranks leave the first together) has no straggler.
      const afterCollective = plan.ops[call.key.opIndex - 1]?.kind === 'collective';
      expect(call.result.straggler, call.key.op).toBe(afterCollective ? null : slow.rank);
      if (afterCollective) continue;
      expect(call.result.waits.map((w) => w.rank).sort()).toEqual([...Array(t).keys()].filter((r) => r !== slow.rank));
    }
    expect(a.verdict.straggler).toBe(slow.rank);
    const me = a.verdict.ranks.find((r) => r.rank === slow.rank)!;
    expect(me.lastIn).toBe(a.verdict.callsWithStraggler);
    expect(a.verdict.callsWithStraggler).toBeGreaterThan(a.calls.length / 2);
    expect(me.waitedMs).toBe(0);
  },
);
