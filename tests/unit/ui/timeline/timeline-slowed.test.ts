// The timeline's part of a kernel slowed by a ring transfer: its block and its tooltip.
import { expect, test } from 'vitest';
import { scheduleUnderTransfer, type TransferTimes } from '../../../../src/schedule/transfer-slowdown.ts';
import { laneBlocks } from '../../../../src/ui/timeline/timeline-layout.ts';
import { tooltipLines } from '../../../../src/ui/shared/timeline-format.ts';
import { tinyPlan } from '../../schedule/tiny-plan.ts';

const plan = tinyPlan(2, ['x.dgrad', 'x.dgrad.reduce', 'x.wgrad', 'y.add']);
const both = <T>(row: T[]): T[][] => [row, [...row]];
const times: TransferTimes = {
  pairs: 2,
  aloneMs: both([1, 0, 2, 1]),
  overlappedMs: both([1, 0, 3, 1]),
  stepWallMs: { aloneMs: 4, overlappedMs: 5 },
};

test('the wgrad under the async all-reduce gets a slowed block at the end of its compute block, in the compute lane', () => {
  const tl = scheduleUnderTransfer(plan, times, both([0, 3, 0, 0]), { overlap: true });
  const lanes = laneBlocks(tl.events);
  for (const rank of [0, 1]) {
    const slowed = lanes.get(`${rank}:slowed`)!;
    expect(slowed.map((b) => [b.event.op, b.kind, b.lane, b.t0, b.t1])).toEqual([
      ['x.wgrad', 'slowed', 'compute', 3, 4],
    ]);
    const whole = lanes.get(`${rank}:compute`)!.find((b) => b.event.op === 'x.wgrad')!;
    // wgrad runs [1, 4) under the all-reduce's transfer [1, 4): 2 ms alone, the last 1 ms the transfer's.
    expect([whole.t0, whole.t1]).toEqual([1, 4]);
  }
  const tip = tooltipLines(tl.events.find((e) => e.op === 'x.wgrad')!).join('\n');
  expect(tip).toContain('under a ring transfer: 3 ms; alone 2 ms (×1.50');
  expect(tooltipLines(tl.events.find((e) => e.op === 'x.dgrad')!).join('\n')).not.toContain('ring transfer');
});
