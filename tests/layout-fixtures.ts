// The parallel layout the projection and page tests start from, overridden per test.
import type { ParallelLayout } from '../src/megatron/parallel-layout.ts';

/** One GPU's layout: t = p = v = cp = b = 1, no SP, no recompute, no distributed optimizer, no overlaps; `over` replaces fields. */
export const plainLayout = (over: Partial<ParallelLayout> = {}): ParallelLayout => ({
  tp: 1,
  pp: 1,
  vpp: 1,
  cp: 1,
  microBatch: 1,
  sp: false,
  recompute: 'none',
  distributedOptimizer: false,
  overlapGradReduce: false,
  overlapParamGather: false,
  tpCommOverlap: false,
  ...over,
});
