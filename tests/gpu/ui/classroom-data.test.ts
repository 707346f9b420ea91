import { afterAll, describe, expect, test } from 'vitest';
import {
  classroomStepIds,
  classroomSteps,
  concatRows,
  maxAbsDiff,
  sumMatrices,
} from '../../../src/parallel/classroom.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { oracleTolerance } from '../../../src/parallel/oracle.ts';
import type { LayerWorkerPrograms } from '../../../src/session/layer-run.ts';
import { createLayerPool } from '../../../src/session/pools.ts';
import type { RankPool } from '../../../src/ranks/pool.ts';
import { loadClassroomRuns } from '../../../src/session/classroom-data.ts';

const pools: RankPool<LayerWorkerPrograms>[] = [];
afterAll(async () => {
  for (const p of pools) await p.dispose();
});

const maxOf = (a: Float32Array) => a.reduce((m, v) => Math.max(m, Math.abs(v)), 0);

// Tolerance: the oracle's 16·ε·(K+1)·max|ref|, K = 32 (ffn) for the classroom: TP=t sums the same
// float32 products in another order; a wrong shard or a missing all-reduce errs by O(max|ref|).
describe.each([2, 4])('the classroom MLP on %i real rank workers', (t) => {
  test('the all-reduced partial sums (step 5), dX (step 6) and the SP shards (step 7) equal the TP=1 result', async () => {
    const c = configFromPreset('classroom', { tp: t });
    const pool = await createLayerPool(t);
    pools.push(pool);
    const runs = await loadClassroomRuns(pool, c);
    const ref = runs.reference;
    expect(runs.tp).toHaveLength(t);
    expect(runs.tp[1].w1Gate.shape).toEqual([c.h, c.ffn / t]);
    expect(runs.tp[1].yGate.shape).toEqual([c.s, c.ffn / t]);
    expect(runs.tp[1].w2.shape).toEqual([c.ffn / t, c.h]);
    expect(runs.tp[1].zPartial.shape).toEqual([c.s, c.h]);
    // The partial sums are not the result by themselves, their host-side sum is.
    const sum = sumMatrices(runs.tp.map((d) => d.zPartial));
    const tol = oracleTolerance(c, maxOf(ref.z.data));
    expect(maxAbsDiff(runs.tp[0].zPartial.data, ref.z.data)).toBeGreaterThan(100 * tol);
    expect(maxAbsDiff(sum.data, ref.z.data)).toBeLessThanOrEqual(tol);
    for (const d of runs.tp)
      expect(maxAbsDiff(d.z.data, ref.z.data), `rank ${d.rank}'s all-reduced Z`).toBeLessThanOrEqual(tol);
    expect(maxAbsDiff(runs.tp[0].dx.data, ref.dx.data)).toBeLessThanOrEqual(oracleTolerance(c, maxOf(ref.dx.data)));
    expect(maxAbsDiff(runs.tp[0].attn.data, ref.attn.data)).toBeLessThanOrEqual(
      oracleTolerance(c, maxOf(ref.attn.data)),
    );
    // Forward all-reduce (g) and backward all-reduce (f) and the attention g: three, and nothing for g's
    // backward; at t = 4 > 2 KV groups the attention first all-gathers linear_qkv's slices (Megatron-Core).
    const gathersQkv = t > c.groups;
    expect(runs.tp[0].collectives.map((x) => x.name)).toEqual([
      'classroom.mlp.out',
      ...(gathersQkv ? ['qkv.gather'] : []),
      'classroom.attn.out',
      'classroom.mlp.in.grad',
    ]);
    const sp = runs.sp!;
    expect(sp[0].x.shape).toEqual([c.s / t, c.h]);
    expect(sp[0].xFull.shape).toEqual([c.s, c.h]);
    expect(maxAbsDiff(concatRows(sp.map((d) => d.z)).data, ref.z.data)).toBeLessThanOrEqual(tol);
    expect(maxAbsDiff(concatRows(sp.map((d) => d.dx)).data, ref.dx.data)).toBeLessThanOrEqual(
      oracleTolerance(c, maxOf(ref.dx.data)),
    );
    expect(sp[0].collectives.map((x) => x.mapping.split(' ')[0])).toEqual([
      'gatherFromSequenceParallelRegion',
      'reduceScatterToSequenceParallelRegion',
      ...(gathersQkv ? ['allGatherLastDimFromTensorParallelRegion'] : []),
      'reduceFromTensorParallelRegion',
      'reduceScatterToSequenceParallelRegion',
      'gatherFromSequenceParallelRegion',
    ]);
    const steps = classroomSteps(runs);
    expect(steps.map((s) => s.id)).toEqual([...classroomStepIds]);
    for (const s of steps)
      for (const k of s.checks) expect(k.pass, `${s.id}: ${k.label} ${k.maxAbs} > ${k.tolerance}`).toBe(true);
  });
});

test('a second classroom run on the same t = 2 workers, its collectives written into the first run’s results (ResultTensors), gives the same values bit for bit', async () => {
  const c = configFromPreset('classroom', { tp: 2 });
  const pool = await createLayerPool(2);
  pools.push(pool);
  const first = await loadClassroomRuns(pool, c);
  const second = await loadClassroomRuns(pool, c);
  // Same inputs, same kernels, same ring order: every value is the same float32, reused buffer or not.
  for (const [a, b] of [
    [first.tp, second.tp],
    [first.sp!, second.sp!],
  ])
    for (let r = 0; r < a.length; r++)
      for (const k of ['xFull', 'z', 'dzFull', 'dx', 'attn'] as const)
        expect(maxAbsDiff(a[r][k].data, b[r][k].data), `rank ${r}'s ${k}`).toBe(0);
});
