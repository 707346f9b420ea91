import { describe, expect, it } from 'vitest';
import {
  dpOptionsOf,
  gatherInSchedule,
  paramGatherStart,
  paramGatherStartWaitMs,
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

describe('align_grad_reduce with the interleaved schedule (schedules.py grad_sync_func)', () => {
  // Stage 1 of p 2, two chunks: backwards of chunk 1 [2, 3], chunk 0 [3, 4] (its last), chunk 1 [4, 5], chunk 0 [5, 6].
  const two: StageOps = {
    chunk: [0, 1, 1, 0, 1, 0],
    forward: [1, 1, 0, 0, 0, 0],
    t0: [0, 1, 2, 3, 4, 5],
    t1: [1, 2, 3, 4, 5, 6],
  };
  const aligned = o({ overlapGradReduce: true, alignGradReduce: true });

  it('launches a chunk after the backward pipeline-rank places past its last one, all its buckets at once', () => {
    // Stage 0, one chunk of 100 parameters in two buckets: both issued at the end of its last backward (3 ms), not at 2 and 3.
    const g = stageGradSync(0, ops, [100], aligned, us, 2);
    expect(g.sync.busy).toEqual([{ t0: 3, t1: 4 }]);
    // Stage 1: chunk 1's last backward is the 3rd (index 2, ends 5), launched after backward index 3 (ends 6);
    // chunk 0's last is index 3, one past the end: after the last backward (6). One bucket each (stage > 0).
    const s1 = stageGradSync(1, two, [100, 100], aligned, us, 2);
    expect(s1.chunks.map((c) => c.lastBackward)).toEqual([
      { t0: 6, t1: 6 },
      { t0: 6, t1: 6 },
    ]);
    // Unaligned, each chunk's bucket is ready at the end of its own last backward.
    const free = stageGradSync(1, two, [100, 100], o({ overlapGradReduce: true }), us, 2);
    expect(free.chunks.map((c) => c.lastBackward)).toEqual([
      { t0: 5, t1: 6 },
      { t0: 4, t1: 5 },
    ]);
  });

  it('is on exactly with --overlap-grad-reduce and v > 1; the aligned gather exactly with v > 1', () => {
    const setup = { overlapGradReduce: true, overlapParamGather: true, distributedOptimizer: true };
    expect(dpOptionsOf(setup, { dp: 4, cp: 2, vpp: 2 })).toMatchObject({
      alignGradReduce: true,
      alignParamGather: true,
      dpGroup: 8,
      bucketSize: 40e6,
    });
    const oneF1b = dpOptionsOf(setup, { dp: 4, cp: 1, vpp: 1 });
    expect(oneF1b).toMatchObject({ alignGradReduce: false, alignParamGather: false });
    expect(gatherInSchedule(oneF1b, 4)).toBe(true);
    expect(gatherInSchedule(oneF1b, 1)).toBe(false);
    expect(gatherInSchedule(dpOptionsOf(setup, { dp: 4, cp: 1, vpp: 2 }), 4)).toBe(false);
  });
});

describe('the parameter gather without align_param_gather (1F1B)', () => {
  it('waits for the first bucket at the first forward pre-hook, the rest hidden under that forward', () => {
    // Buckets of 0.5 ms each, forward 0.4 ms: 0.5 + max(0, 1 − 0.4).
    expect(paramGatherStartWaitMs([0.5, 0.5, 0.5], 0.4)).toBeCloseTo(1.1, 12);
    expect(paramGatherStartWaitMs([2], 10)).toBe(2);
  });

  it('idle before the first forward hides nothing, and in the schedule nothing is left to add', () => {
    const late: StageOps = { chunk: [0, 0], forward: [1, 0], t0: [5, 6], t1: [6, 8] };
    const over = o({ distributedOptimizer: true, overlapGradReduce: true, overlapParamGather: true });
    const g = stageGradSync(0, late, [100], over, us, 2);
    // Aligned (v > 1): 5 ms of warm-up idle hide both buckets.
    expect(stageParamGather(g, late, { ...over, alignParamGather: true }, us, 2, undefined).exposedMs).toBe(0);
    // Unaligned: 0.5 + max(0, 0.5 − 1) exposed, as the wait the schedule holds.
    expect(stageParamGather(g, late, { ...over, alignParamGather: false }, us, 2, undefined).exposedMs).toBe(0.5);
    expect(stageParamGather(g, late, { ...over, alignParamGather: false }, us, 2, undefined, true).exposedMs).toBe(0);
  });
});

describe('the first gather by Megatron release (megatron-release.ts)', () => {
  it('core_v0.19 dispatches it at the first forward (a wait); core_r0.8 at the step start (a ready time)', () => {
    // Buckets 0.5, 0.5, 0.5 ms, forward 0.4 ms.
    expect(paramGatherStart([0.5, 0.5, 0.5], 0.4, 'first-forward')).toEqual({
      readyMs: 0,
      waitMs: paramGatherStartWaitMs([0.5, 0.5, 0.5], 0.4),
    });
    const r08 = paramGatherStart([0.5, 0.5, 0.5], 0.4, 'step-start');
    expect(r08.readyMs).toBe(0.5);
    expect(r08.waitMs).toBeCloseTo(0.6, 12);
    // A stage > 0 (one bucket of 2 ms): all of it a ready time, nothing waited after it.
    expect(paramGatherStart([2], 10, 'step-start')).toEqual({ readyMs: 2, waitMs: 0 });
  });
});

describe('the gather order: forward, the reverse of the buckets’ backward order', () => {
  it('the first bucket gathered is the last laid out, the remainder holding the first layers', () => {
    // 120 parameters in buckets of 50 (backward order 50, 50, 20): the 20-parameter bucket is waited
    // for first, 0.2 ms, and the 1 ms rest hides under the 1 ms forward.
    const over = o({ distributedOptimizer: true, overlapGradReduce: true, overlapParamGather: true });
    const g = stageGradSync(0, ops, [120], over, us, 2);
    expect(g.chunks[0]!.buckets).toEqual([50, 50, 20]);
    expect(stageParamGather(g, ops, { ...over, alignParamGather: false }, us, 2, undefined).exposedMs).toBeCloseTo(
      0.2,
      12,
    );
  });
});
