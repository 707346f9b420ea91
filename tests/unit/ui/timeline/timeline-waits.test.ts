import { describe, expect, test } from 'vitest';
import { measuredTimeline } from '../../../../src/kineto/measured-timeline.ts';
import { configFromPreset } from '../../../../src/parallel/config.ts';
import { makePlan } from '../../../../src/parallel/plan.ts';
import { parseSystem } from '../../../../src/hardware/systems.ts';
import { projectLayer } from '../../../../src/projection/layer/projected-layer.ts';
import { withSlowRank } from '../../../../src/schedule/durations.ts';
import { scheduleStep } from '../../../../src/schedule/schedule.ts';
import { laneBlocks } from '../../../../src/ui/timeline/timeline-layout.ts';
import { stragglerSentence, timelineStragglers } from '../../../../src/ui/timeline/timeline-waits.ts';
import { loadJob } from '../../kineto/kineto-fixtures.ts';
import { durations, tinyPlan } from '../../schedule/tiny-plan.ts';

describe('the waits the timeline draws', () => {
  test('a scheduled step with rank 2 slowed 3× (withSlowRank): the other ranks wait inside both all-reduces', () => {
    const plan = tinyPlan(4, ['a.gemm', 'x.reduce', 'b.gemm', 'y.reduce']);
    const d = withSlowRank(
      durations(
        plan,
        [1, 2, 3, 4].map(() => [1, 1, 1, 1]),
      ),
      { rank: 2, factor: 3 },
    );
    expect(d.computeMs[2]).toEqual([3, 0, 3, 0]);
    expect(d.computeMs[1]).toEqual([1, 0, 1, 0]);
    const tl = scheduleStep(plan, d, { overlap: false });
    const { waits, verdict } = timelineStragglers(tl);
    expect(waits.map((w) => [w.rank, w.event.op, w.t0, w.t1, w.straggler])).toEqual([
      [0, 'x.reduce', 1, 3, 2],
      [1, 'x.reduce', 1, 3, 2],
      [3, 'x.reduce', 1, 3, 2],
      [0, 'y.reduce', 5, 7, 2],
      [1, 'y.reduce', 5, 7, 2],
      [3, 'y.reduce', 5, 7, 2],
    ]);
    expect(stragglerSentence(verdict)).toBe(
      'Straggler: rank 2 entered 2 of 2 collectives last; ranks 0, 1 and 3 each waited 4 ms inside them: their long collectives are waiting for rank 2, not slow.',
    );
    // The lane of rank 0's comm holds its two waits; rank 2's none.
    const lanes = laneBlocks(tl.events, waits);
    expect(lanes.get('0:wait')?.map((b) => [b.kind, b.t0, b.t1])).toEqual([
      ['wait', 1, 3],
      ['wait', 5, 7],
    ]);
    expect(lanes.get('2:wait')).toBeUndefined();
  });

  test('withSlowRank refuses a rank the step does not have and leaves factor 1 alone', () => {
    const plan = tinyPlan(2, ['a.gemm', 'x.reduce']);
    const d = durations(plan, [
      [1, 1],
      [1, 1],
    ]);
    expect(withSlowRank(d, { rank: 1, factor: 1 })).toBe(d);
    expect(() => withSlowRank(d, { rank: 2, factor: 3 })).toThrow(/rank 2 is slowed but the step has ranks 0–1/);
  });

  test('#slow=2:3 on the projected cluster: the gpt2 layer at t = 4 names rank 2, the others wait', async () => {
    const plan = (await makePlan(configFromPreset('gpt2-layer', { tp: 4 }))).plan;
    const m = { system: parseSystem('dgx-h100'), dtype: 'bf16' as const };
    const tl = projectLayer(plan, m, true, { rank: 2, factor: 3 });
    const { waits, verdict } = timelineStragglers(tl);
    expect(verdict.straggler).toBe(2);
    expect(waits.length).toBeGreaterThan(0);
    expect(waits.every((w) => w.straggler === 2 && w.rank !== 2)).toBe(true);
    expect(timelineStragglers(projectLayer(plan, m, true)).verdict.straggler).toBeNull();
  });

  test('a measured window: rank 1 enters step 1’s all-reduce 50 µs after rank 0, which waits', async () => {
    const tl = measuredTimeline(await loadJob('tp2-rank0.json', 'tp2-rank1.json'), 1);
    const { waits, verdict } = timelineStragglers(tl);
    expect(waits.map((w) => [w.rank, w.straggler])).toEqual([[0, 1]]);
    expect(waits[0]!.t1 - waits[0]!.t0).toBeCloseTo(0.05, 9);
    expect(verdict.straggler).toBe(1);
    expect(stragglerSentence(verdict)).toBe(
      'Straggler: rank 1 entered 1 of 3 collectives last; rank 0 waited 50 µs inside them: their long collectives are waiting for rank 1, not slow.',
    );
  });
});
