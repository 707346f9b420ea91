import { describe, expect, test } from 'vitest';
import { interconnectPresets } from '../../../src/hardware/interconnect.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { makePlan } from '../../../src/parallel/plan.ts';
import { timelineBlocks } from '../../../src/schedule/blocks.ts';
import { modeledCommMs, sameComputeMs } from '../../../src/schedule/durations.ts';
import { exposedComm } from '../../../src/schedule/exposed.ts';
import { scheduleStep } from '../../../src/schedule/schedule.ts';
import { durations, tinyPlan } from './tiny-plan.ts';

const ev = (tl: ReturnType<typeof scheduleStep>, rank: number, op: string) =>
  tl.events.find((e) => e.rank === rank && e.op === op)!;

describe('scheduling a step', () => {
  test('compute ops run back to back from 0 on each rank', () => {
    const plan = tinyPlan(1, ['a.gemm', 'b', 'c.gemm']);
    const tl = scheduleStep(plan, durations(plan, [[1, 2, 3]]), { overlap: false });
    expect(tl.events.map((e) => [e.op, e.t0, e.t1])).toEqual([
      ['a.gemm', 0, 1],
      ['b', 1, 3],
      ['c.gemm', 3, 6],
    ]);
    expect(tl.stepMs).toBe(6);
  });

  test('a collective ends on every rank at the last arrival plus its duration', () => {
    const plan = tinyPlan(2, ['a.gemm', 'x.reduce', 'b.gemm']);
    const tl = scheduleStep(
      plan,
      durations(plan, [
        [1, 2, 1],
        [3, 2, 1],
      ]),
      { overlap: false },
    );
    expect([ev(tl, 0, 'x.reduce').t1, ev(tl, 1, 'x.reduce').t1]).toEqual([5, 5]);
    expect(ev(tl, 0, 'x.reduce')).toMatchObject({ t0: 1, waitMs: 2, lastArrival: 1, stream: 'comm' });
    expect(ev(tl, 0, 'x.reduce').phases).toEqual([
      { name: 'wait', t0: 1, t1: 3 },
      { name: 'transfer', t0: 3, t1: 5 },
    ]);
    expect(ev(tl, 1, 'b.gemm').t0).toBe(5);
  });

  test('the ring moves at its slowest member: the transfer takes the longest rank duration', () => {
    const plan = tinyPlan(2, ['x.reduce']);
    const tl = scheduleStep(plan, durations(plan, [[2], [5]]), { overlap: false });
    expect(tl.events.map((e) => e.t1)).toEqual([5, 5]);
  });

  test('the step time is the slowest rank’s end, and the faster rank idles until then', () => {
    const plan = tinyPlan(2, ['x.reduce', 'b.gemm']);
    const tl = scheduleStep(
      plan,
      durations(plan, [
        [1, 2],
        [1, 7],
      ]),
      { overlap: false },
    );
    expect(tl.stepMs).toBe(8);
    expect(tl.slowestRank).toBe(1);
    expect(tl.totals.map((r) => [r.endMs, r.idleMs])).toEqual([
      [3, 5],
      [8, 0],
    ]);
  });

  test('without overlap a dgrad reduce holds back the wgrad GEMMs and is exposed whole', () => {
    const plan = tinyPlan(2, ['x.dgrad', 'x.dgrad.reduce', 'x.a.wgrad', 'x.b.wgrad', 'next.backward']);
    const tl = scheduleStep(
      plan,
      durations(plan, [
        [1, 5, 1, 1, 1],
        [1, 5, 1, 1, 1],
      ]),
      { overlap: false },
    );
    expect(ev(tl, 0, 'x.a.wgrad').t0).toBe(6);
    expect(ev(tl, 0, 'x.dgrad.reduce').exposedMs).toBe(5);
    expect(tl.stepMs).toBe(9);
  });

  test('overlap on shrinks a dgrad reduce’s exposed part by the wgrad time', () => {
    const plan = tinyPlan(2, ['x.dgrad', 'x.dgrad.reduce', 'x.a.wgrad', 'x.b.wgrad', 'next.backward']);
    const d = durations(plan, [
      [1, 5, 1, 1, 1],
      [1, 5, 1, 1, 1],
    ]);
    const off = scheduleStep(plan, d, { overlap: false });
    const on = scheduleStep(plan, d, { overlap: true });
    const wgradMs = 2;
    expect(ev(on, 0, 'x.dgrad.reduce').exposedMs).toBe(ev(off, 0, 'x.dgrad.reduce').exposedMs - wgradMs);
    expect(ev(on, 0, 'x.dgrad.reduce')).toMatchObject({ overlapped: true, exposed: [{ t0: 3, t1: 6 }] });
    expect(ev(on, 0, 'x.a.wgrad').t0).toBe(1);
    expect(ev(on, 0, 'next.backward').t0).toBe(6);
    expect(on.stepMs).toBe(off.stepMs - wgradMs);
  });

  test('with overlap a dgrad reduce listed after its wgrad GEMMs still overlaps them', () => {
    const before = tinyPlan(2, ['x.dgrad', 'x.a.wgrad', 'x.b.wgrad', 'x.dgrad.reduce', 'next.backward']);
    const tl = scheduleStep(
      before,
      durations(before, [
        [1, 1, 1, 5, 1],
        [1, 1, 1, 5, 1],
      ]),
      { overlap: true },
    );
    expect(ev(tl, 0, 'x.dgrad.reduce')).toMatchObject({ t0: 1, t1: 6, exposedMs: 3 });
    expect(ev(tl, 0, 'next.backward').t0).toBe(6);
  });

  test('with overlap the first op after the wgrads waits for whichever ends later', () => {
    const plan = tinyPlan(1, ['x.dgrad', 'x.dgrad.reduce', 'x.wgrad', 'next.backward']);
    const tl = scheduleStep(plan, durations(plan, [[1, 1, 4, 1]]), { overlap: true });
    expect(ev(tl, 0, 'next.backward').t0).toBe(5);
    expect(ev(tl, 0, 'x.dgrad.reduce').exposedMs).toBe(0);
  });

  test('overlap leaves collectives other than dgrad reduces blocking', () => {
    const plan = tinyPlan(2, ['a.gemm', 'attn.reduce', 'x.wgrad']);
    const tl = scheduleStep(
      plan,
      durations(plan, [
        [1, 3, 1],
        [1, 3, 1],
      ]),
      { overlap: true },
    );
    expect(ev(tl, 0, 'x.wgrad').t0).toBe(4);
  });

  test('the schedule’s exposed totals agree with the trace analysis of its events', () => {
    const plan = tinyPlan(2, ['x.dgrad', 'x.dgrad.reduce', 'x.wgrad', 'y.backward', 'y.reduce']);
    const tl = scheduleStep(
      plan,
      durations(plan, [
        [1, 5, 2, 1, 1],
        [2, 5, 1, 1, 1],
      ]),
      { overlap: true },
    );
    expect(exposedComm(tl.events).map((r) => r.exposedMs)).toEqual(tl.totals.map((r) => r.exposedMs));
  });

  test('durations of the wrong shape are refused with the offending index', () => {
    const plan = tinyPlan(2, ['a.gemm', 'x.reduce']);
    expect(() => scheduleStep(plan, durations(plan, [[1, 1]]), { overlap: false })).toThrow(
      /computeMs has 1 ranks, the plan has 2/,
    );
    expect(() =>
      scheduleStep(
        plan,
        durations(plan, [
          [1, 1],
          [1, NaN],
        ]),
        { overlap: false },
      ),
    ).toThrow(/commMs\[1\]\[1\] \(x.reduce\)/);
  });
});

describe('scheduling the real layer plan with modeled communication', () => {
  const run = async (tp: number, overlap: boolean) => {
    const { plan } = await makePlan(configFromPreset('classroom', { tp }));
    const d = {
      computeMs: sameComputeMs(plan, () => 0.01),
      commMs: modeledCommMs(plan, interconnectPresets['pcie-gen3']),
    };
    return scheduleStep(plan, d, { overlap });
  };

  test('with t = 1 there are no comm events and no exposed time', async () => {
    const tl = await run(1, false);
    expect(tl.events.filter((e) => e.stream === 'comm')).toEqual([]);
    expect(timelineBlocks(tl).filter((b) => b.kind === 'exposed')).toEqual([]);
    expect(tl.totals[0]).toMatchObject({ commMs: 0, exposedMs: 0, idleMs: 0 });
  });

  test('with t = 4 every rank has comm and exposed blocks, and overlap lowers the exposed total', async () => {
    const off = await run(4, false);
    const on = await run(4, true);
    for (const r of [0, 1, 2, 3]) {
      expect(timelineBlocks(off).filter((b) => b.rank === r && b.kind === 'exposed').length).toBeGreaterThan(0);
      expect(on.totals[r]!.exposedMs).toBeLessThan(off.totals[r]!.exposedMs);
    }
  });
});
