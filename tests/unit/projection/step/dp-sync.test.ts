import { describe, expect, it } from 'vitest';
import {
  stageGradSync,
  stageParamGather,
  type DpOptions,
  type StageOps,
} from '../../../../src/projection/step/dp-sync.ts';

/** Stage 0, one chunk: a forward [0, 1] and its backward [1, 3]. */
const ops: StageOps = { chunk: [0, 0], forward: [1, 0], t0: [0, 1], t1: [1, 3] };
/** 100 parameters, buckets of 50; each bucket's collective 10 µs per parameter (0.5 ms per bucket). */
const o = (x: Partial<DpOptions> = {}): DpOptions => ({
  overlapGradReduce: false,
  overlapParamGather: false,
  distributedOptimizer: false,
  dpGroup: 2,
  bucketSize: 50,
  ...x,
});
const us = (params: number): number => params * 10;

describe('stageGradSync: the gradient buckets on the DP stream', () => {
  it('without overlap, one bucket after the last backward: ends 3 + 1 = 4 ms, 1 ms exposed, no cost', () => {
    const g = stageGradSync(0, ops, [100], o(), us, 2);
    expect(g.stageEndMs).toBe(3);
    expect(g.firstForward).toBe(0);
    expect(g.sync.buckets).toBe(1);
    expect(g.sync.endMs).toBeCloseTo(4, 12);
    expect(g.sync.exposedMs).toBeCloseTo(1, 12);
    expect(g.overlapCostMs).toBe(0);
  });

  it('with overlap, two buckets ready at 2 and 3 ms: ends 3.5, 0.5 exposed, the hidden 0.5 ms costs 0.5·(1 − 1/f)', () => {
    const g = stageGradSync(0, ops, [100], o({ overlapGradReduce: true }), us, 2);
    expect(g.sync.buckets).toBe(2);
    expect(g.sync.busy).toEqual([
      { t0: 2, t1: 2.5 },
      { t0: 3, t1: 3.5 },
    ]);
    expect(g.sync.endMs).toBeCloseTo(3.5, 12);
    expect(g.sync.exposedMs).toBeCloseTo(0.5, 12);
    expect(g.overlapCostMs).toBeCloseTo(0.5 * (1 - 1 / 2), 12);
  });

  it('one DP rank syncs nothing', () => {
    const g = stageGradSync(0, ops, [100], o({ dpGroup: 1, overlapGradReduce: true }), us, 2);
    expect(g.sync.endMs).toBe(3);
    expect(g.sync.exposedMs).toBe(0);
    expect(g.overlapCostMs).toBe(0);
  });
});

describe('stageParamGather: the distributed optimizer all-gather', () => {
  const dist = o({ distributedOptimizer: true, overlapGradReduce: true });
  it('without the distributed optimizer: none', () => {
    const g = stageGradSync(0, ops, [100], o(), us, 2);
    expect(stageParamGather(g, ops, o(), us, 2, undefined)).toEqual({ exposedMs: 0, overlapCostMs: 0 });
  });

  it('without overlap: both 0.5 ms buckets exposed', () => {
    const g = stageGradSync(0, ops, [100], dist, us, 2);
    expect(stageParamGather(g, ops, dist, us, 2, undefined)).toEqual({ exposedMs: 1, overlapCostMs: 0 });
  });

  it('with overlap, no warm-up idle: the first bucket exposed, the second hidden under the forward at a cost', () => {
    const over = { ...dist, overlapParamGather: true };
    const g = stageGradSync(0, ops, [100], over, us, 4);
    // exposed max(0.5 − 0, 1 − 0 − 1) = 0.5; hidden 0.5 under the 1 ms forward, cost 0.5·(1 − 1/4).
    expect(stageParamGather(g, ops, over, us, 4, undefined)).toEqual({ exposedMs: 0.5, overlapCostMs: 0.375 });
  });

  it('beside TP on a shared link: G·uF taken from the gather, exposed past the forward, the forward G·slowF later', () => {
    const over = { ...dist, overlapParamGather: true };
    const short: StageOps = { ...ops, t1: [0.6, 3] };
    const g = stageGradSync(0, short, [100], over, us, 4);
    const x = stageParamGather(g, short, over, us, 4, { uF: 0.4, slowF: 0.1, uB: 0, slowB: 0 });
    // exposed max(0.5, 1 − 0.6) = 0.5; G = min(0.6, 0.5) = 0.5; shared 0.2; past the forward 0.5 + 0.2 − 0.6.
    expect(x.exposedMs).toBeCloseTo(0.5, 12);
    expect(x.overlapCostMs).toBeCloseTo(0.375, 12);
    expect(x.tpShare!.sharedMs).toBeCloseTo(0.2, 12);
    expect(x.tpShare!.exposedMs).toBeCloseTo(0.1, 12);
    expect(x.tpShare!.computeDelayMs).toBeCloseTo(0.05, 12);
  });
});
