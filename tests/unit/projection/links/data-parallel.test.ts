import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import { collectiveTimeUs } from '../../../../src/hardware/interconnect.ts';
import {
  bucketSyncUs,
  defaultBucketSize,
  gradBuckets,
  gradSync,
  paramGatherExposedMs,
  stateBytes,
} from '../../../../src/projection/links/data-parallel.ts';

const h100 = systems['dgx-h100'];

describe("Megatron-Core's gradient buckets", () => {
  it('uses max(40M, 1M·DP·cp) parameters per bucket (the dp_cp group of training.py)', () => {
    expect(defaultBucketSize(8)).toBe(40e6);
    expect(defaultBucketSize(64)).toBe(64e6);
  });

  it('makes one bucket without --overlap-grad-reduce, and on stages > 0 and chunks > 0', () => {
    const o = { overlapGradReduce: true, stage: 0, chunk: 0, bucketSize: 40e6 };
    expect(gradBuckets(100e6, o)).toEqual([40e6, 40e6, 20e6]);
    expect(gradBuckets(100e6, { ...o, overlapGradReduce: false })).toEqual([100e6]);
    expect(gradBuckets(100e6, { ...o, stage: 1 })).toEqual([100e6]);
    expect(gradBuckets(100e6, { ...o, chunk: 1 })).toEqual([100e6]);
  });
});

describe('the distributed optimizer', () => {
  it("keeps Megatron's bytes per parameter: fp16 4 + 16/d, bf16 6 + 12/d, fp32 8 + 8/d", () => {
    const total = (x: { weights: number; grads: number; optimizer: number }) => x.weights + x.grads + x.optimizer;
    for (const d of [1, 2, 8, 64]) {
      expect(total(stateBytes('fp16', true, d))).toBeCloseTo(4 + 16 / d, 12);
      expect(total(stateBytes('bf16', true, d))).toBeCloseTo(6 + 12 / d, 12);
      expect(total(stateBytes('fp32', true, d))).toBeCloseTo(8 + 8 / d, 12);
    }
    expect(total(stateBytes('bf16', false, 64))).toBe(18);
  });

  it('reduce-scatters the gradients and all-gathers the parameters instead of one all-reduce', () => {
    const link = h100.intra;
    const P = 50e6;
    const plain = bucketSyncUs(P, 'bf16', false, 8, link, h100);
    const dist = bucketSyncUs(P, 'bf16', true, 8, link, h100);
    expect(plain.gradUs).toBeCloseTo(h100.collectiveBaseUs + collectiveTimeUs('allReduce', P * 4, 8, link), 9);
    expect(plain.paramUs).toBe(0);
    expect(dist.gradUs).toBeCloseTo(h100.collectiveBaseUs + collectiveTimeUs('reduceScatter', P * 4, 8, link), 9);
    expect(dist.paramUs).toBeCloseTo(h100.collectiveBaseUs + collectiveTimeUs('allGather', P * 2, 8, link), 9);
    expect(bucketSyncUs(P, 'bf16', true, 1, link, h100)).toEqual({ gradUs: 0, paramUs: 0 });
  });
});

describe('the gradient sync on the DP stream', () => {
  it('issues every bucket after backward without overlap: exposed = Σ bucket times', () => {
    const s = gradSync([{ buckets: [10, 10], lastBackward: { t0: 0, t1: 8 } }], false, (p) => p * 100, 10);
    expect(s.endMs).toBeCloseTo(12, 9);
    expect(s.exposedMs).toBeCloseTo(2, 9);
  });

  it('issues bucket k at (k + 1)/n of the last backward with overlap: only the last bucket is exposed', () => {
    // Four 1 ms buckets over a 4 ms backward [6, 10]: ready at 7, 8, 9, 10; each done before the next is ready.
    const s = gradSync([{ buckets: [1, 1, 1, 1], lastBackward: { t0: 6, t1: 10 } }], true, (p) => p * 1000, 10);
    expect(s.endMs).toBeCloseTo(11, 9);
    expect(s.exposedMs).toBeCloseTo(1, 9);
    expect(s.commMs).toBeCloseTo(4, 9);
  });

  it('queues buckets that arrive faster than the link drains them', () => {
    // Two 3 ms buckets ready at 5 and 10 → 5..8, 10..13.
    const s = gradSync([{ buckets: [1, 1], lastBackward: { t0: 0, t1: 10 } }], true, (p) => p * 3000, 10);
    expect(s.endMs).toBeCloseTo(13, 9);
  });

  it('hides the overlapped parameter all-gather under the warm-up idle time and the first forward', () => {
    expect(paramGatherExposedMs([2, 2, 2], false, 100, 100)).toBe(6);
    expect(paramGatherExposedMs([2, 2, 2], true, 0, 3)).toBe(3);
    expect(paramGatherExposedMs([2, 2, 2], true, 1, 10)).toBe(1);
    expect(paramGatherExposedMs([2, 2, 2], true, 10, 10)).toBe(0);
  });
});
