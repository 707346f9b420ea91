import { describe, expect, test } from 'vitest';
import { rankMemory } from '../../../src/accounting/accounting.ts';
import { rankLiveMemory } from '../../../src/accounting/live-memory.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { bufferClasses } from '../../../src/parallel/memory-record.ts';
import { replayStepMemory } from '../../../src/parallel/memory-replay.ts';
import { makePlan } from '../../../src/parallel/plan.ts';
import { lifetimeOfBuffer, memoryClasses } from '../../../src/projection/pipeline/memory-timeline.ts';
import { scheduleStep } from '../../../src/schedule/schedule.ts';
import { bufferClassViews, rankMemoryLanes } from '../../../src/session/memory-lanes.ts';

describe('memory lanes of the ranks', () => {
  test('a rank’s buffers placed on the step’s timeline keep their order and their peak, end at the rank’s end, and carry the accounting’s total', async () => {
    const c = configFromPreset('gpt2-layer', { tp: 2 });
    const { plan } = await makePlan(c);
    // 1 ms per op and per collective, overlap on: the asynchronous dgrad all-reduces run under the wgrads.
    const ones = plan.ranks.map(() => plan.ops.map(() => 1));
    const tl = scheduleStep(plan, { computeMs: ones, commMs: ones }, { overlap: true });
    const records = await Promise.all([0, 1].map((r) => replayStepMemory(c, r)));
    const lanes = rankMemoryLanes(
      records,
      tl,
      [0, 1].map((r) => rankMemory(plan, r)),
    );
    lanes.forEach((lane, r) => {
      expect(lane.title).toBe(`rank ${r}`);
      expect(lane.end).toBe(tl.totals[r]!.endMs);
      for (const x of lane.intervals) expect(x.t1, x.label).toBeGreaterThanOrEqual(x.t0);
      expect(lane.peak.peakBytes).toBe(rankLiveMemory(records[r]!).peak.peakBytes);
      expect(lane.predicted?.bytes).toBe(rankMemory(plan, r).totalBytes);
    });
  });

  test('every buffer class maps to one of the projection’s lifetime classes, and the chart shows each class once', () => {
    expect(bufferClasses.map((c) => lifetimeOfBuffer[c])).toEqual([
      'resident',
      'resident',
      'perStep',
      'perMicroBatch',
      'transient',
      'transient',
    ]);
    expect(new Set(bufferClasses.map((c) => lifetimeOfBuffer[c]))).toEqual(new Set(memoryClasses));
    expect(bufferClassViews.map((v) => v.key)).toEqual([...bufferClasses]);
  });
});
