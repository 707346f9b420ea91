import { describe, expect, test } from 'vitest';
import { interconnectPresets } from '../../../../src/hardware/interconnect.ts';
import { configFromPreset } from '../../../../src/parallel/config.ts';
import { makePlan } from '../../../../src/parallel/plan.ts';
import { modeledCommMs, sameComputeMs } from '../../../../src/schedule/durations.ts';
import { scheduleStep } from '../../../../src/schedule/schedule.ts';
import { tracedTimeline } from '../../../../src/schedule/traced-timeline.ts';
import type { TraceEvent, TracePass } from '../../../../src/core/trace-event.ts';
import {
  estimateTextWidth,
  fitLabel,
  laneBlocks,
  laneLayout,
  phaseSpans,
  eventPass,
  shownEvents,
  shownSpan,
  shownTotals,
  visibleRange,
} from '../../../../src/ui/timeline/timeline-layout.ts';

async function gpt2(tp: number, overlap = false) {
  const plan = (await makePlan(configFromPreset('gpt2-layer', { tp }))).plan;
  return scheduleStep(
    plan,
    {
      computeMs: sameComputeMs(plan, (i) => plan.ops[i]!.flops / 5e6),
      commMs: modeledCommMs(plan, interconnectPresets['pcie-gen3']),
    },
    { overlap },
  );
}

describe('lane layout', () => {
  test('each rank gets a compute lane then a comm lane, stacked without overlap', () => {
    const sizes = { compute: 40, comm: 20, innerGap: 2, rankGap: 10 };
    const { lanes, height } = laneLayout(3, sizes);
    expect(lanes.map((l) => `${l.rank}:${l.kind}`)).toEqual([
      '0:compute',
      '0:comm',
      '1:compute',
      '1:comm',
      '2:compute',
      '2:comm',
    ]);
    expect(lanes.map((l) => l.y)).toEqual([0, 42, 72, 114, 144, 186]);
    expect(height).toBe(206);
    for (let i = 1; i < lanes.length; i++)
      expect(lanes[i]!.y).toBeGreaterThanOrEqual(lanes[i - 1]!.y + lanes[i - 1]!.height);
  });
});

describe('what the timeline shows', () => {
  test('blocks per lane: every compute op in the compute lane, collectives and their exposed parts in the comm lane', async () => {
    const tl = await gpt2(4);
    const lanes = laneBlocks(shownEvents(tl, 'both'));
    const computeOps = tl.events.filter((e) => e.rank === 1 && e.stream === 'compute').map((e) => e.op);
    expect(lanes.get('1:compute')!.map((b) => b.event.op)).toEqual(computeOps);
    expect(lanes.get('1:comm')!.every((b) => b.kind === 'comm' && b.lane === 'comm')).toBe(true);
    expect(lanes.get('1:exposed')!.length).toBe(4);
    expect(lanes.get('1:exposed')!.every((b) => b.lane === 'comm' && b.kind === 'exposed')).toBe(true);
  });

  test('one pass shows only its events, its own totals and its own end', async () => {
    const tl = await gpt2(4);
    const fwd = shownEvents(tl, 'forward');
    expect(fwd.every((e) => eventPass(e) === 'forward')).toBe(true);
    const span = shownSpan(tl, 'forward');
    const fwdEnd = Math.max(...fwd.map((e) => e.t1));
    expect(span).toEqual({ t0: 0, t1: fwdEnd, endRank: 0 });
    const [t0] = shownTotals(tl, 'forward');
    const [b0] = shownTotals(tl, 'backward');
    expect(t0!.computeMs + b0!.computeMs).toBeCloseTo(tl.totals[0]!.computeMs, 9);
    expect(t0!.exposedMs + b0!.exposedMs).toBeCloseTo(tl.totals[0]!.exposedMs, 9);
    expect(shownSpan(tl, 'both')).toEqual({ t0: 0, t1: tl.stepMs, endRank: tl.slowestRank });
  });

  test('phase spans run forward then backward and meet where the backward pass starts', async () => {
    const tl = await gpt2(2);
    const [f, b] = phaseSpans(tl.events);
    expect(f!.phase).toBe('forward');
    expect(b!.phase).toBe('backward');
    expect(f!.t1).toBeCloseTo(b!.t0, 9);
    expect(b!.t1).toBe(tl.stepMs);
    expect(phaseSpans(shownEvents(tl, 'backward')).map((s) => s.phase)).toEqual(['backward']);
  });
});

describe('a recorded trace whose ranks marked their passes', () => {
  const ev = (rank: number, op: string, t0: number, t1: number, phase?: TracePass): TraceEvent => ({
    rank,
    stream: 'compute',
    op,
    shape: [],
    bytes: 0,
    t0,
    t1,
    phases: [],
    ...(phase && { phase }),
  });

  test('is banded and shaded by pass as a scheduled step; without marks it has no passes', () => {
    const marked = tracedTimeline([
      ev(0, 'attention', 10, 12, 'forward'),
      ev(1, 'moe.experts', 11, 14, 'forward'),
      ev(0, 'moe.experts.backward', 15, 18, 'backward'),
      ev(1, 'attention.backward', 16, 19, 'backward'),
    ]);
    expect(phaseSpans(marked.events)).toEqual([
      { phase: 'forward', t0: 0, t1: 4 },
      { phase: 'backward', t0: 5, t1: 9 },
    ]);
    expect(marked.events.map((e) => eventPass(e))).toEqual(['forward', 'backward', 'forward', 'backward']);
    const bare = tracedTimeline([ev(0, 'attention', 0, 1), ev(0, 'attention.backward', 2, 3)]);
    expect(phaseSpans(bare.events)).toEqual([]);
    expect(bare.events.map((e) => eventPass(e))).toEqual([undefined, undefined]);
  });
});

describe('culling to the visible window', () => {
  const blocks = [
    { t0: 0, t1: 1 },
    { t0: 1, t1: 3 },
    { t0: 3, t1: 4 },
    { t0: 6, t1: 8 },
    { t0: 8, t1: 9 },
  ];

  test('finds exactly the blocks that intersect the window', () => {
    expect(visibleRange(blocks, 2, 5)).toEqual([1, 3]);
    expect(visibleRange(blocks, 4.5, 5.5)).toEqual([3, 3]);
    expect(visibleRange(blocks, -10, 100)).toEqual([0, 5]);
    expect(visibleRange(blocks, 8.5, 8.6)).toEqual([4, 5]);
  });

  test('agrees with a linear scan on every window of a real lane', async () => {
    const tl = await gpt2(4);
    const lane = laneBlocks(tl.events).get('0:compute')!;
    for (let a = 0; a < tl.stepMs; a += tl.stepMs / 37) {
      const b = a + tl.stepMs / 11;
      const want = lane.map((x, i) => (x.t1 >= a && x.t0 <= b ? i : -1)).filter((i) => i >= 0);
      const [lo, hi] = visibleRange(lane, a, b);
      expect(Array.from({ length: hi - lo }, (_, k) => lo + k)).toEqual(want);
    }
  });
});

describe('fitting a label in a block', () => {
  const measure = (t: string) => t.length * 7;

  test('takes the first candidate that fits in width and height, or none', () => {
    const cands = [['qkv.q [32,768]·[768,192]'], ['qkv.q', '[32,768]·[768,192]'], ['qkv.q']];
    expect(fitLabel(cands, 500, 20, 15, measure)).toEqual(['qkv.q [32,768]·[768,192]']);
    expect(fitLabel(cands, 140, 36, 15, measure)).toEqual(['qkv.q', '[32,768]·[768,192]']);
    expect(fitLabel(cands, 140, 20, 15, measure)).toEqual(['qkv.q']);
    expect(fitLabel(cands, 40, 36, 15, measure)).toBeNull();
  });

  test('the width estimate grows with the font size and the text length', () => {
    expect(estimateTextWidth(10)('abcd')).toBe(24);
    expect(estimateTextWidth(20)('abcd')).toBe(48);
  });
});

test('under SP the step ends with its own finalize span (finalize_model_grads), after the backward pass', async () => {
  const plan = (await makePlan(configFromPreset('gpt2-layer', { tp: 2, sp: true }))).plan;
  const tl = scheduleStep(
    plan,
    {
      computeMs: sameComputeMs(plan, (i) => plan.ops[i]!.flops / 5e6),
      commMs: plan.ranks.map(() => plan.ops.map(() => 0.01)),
    },
    { overlap: true },
  );
  const spans = phaseSpans(tl.events);
  expect(spans.map((s) => s.phase)).toEqual(['forward', 'backward', 'finalize']);
  expect(spans[2]!.t0).toBeGreaterThanOrEqual(spans[1]!.t1 - 1e-9);
  expect(spans[2]!.t1).toBe(tl.stepMs);
});
