// Hand-computed from tests/fixtures/kineto (times in µs after the earliest GPU event, ms in the API):
// rank 0: compute on streams 7 and 13 = [0,500) ∪ [600,800) ∪ [900,950) ∪ [1000,1300) = 1050 µs;
//   NCCL on stream 20: all-reduce [400,600), all-gather [650,750), reduce-scatter [850,900), all-reduce [1300,1500) = 550 µs;
//   exposed: [500,600) of the first all-reduce (the memcpy [500,550) hides nothing), the all-gather
//   none (under the GEMM [600,800)), the reduce-scatter all 50, the second all-reduce all 200 → 350 µs.
// rank 1: compute [0,450) ∪ [600,800) ∪ [1000,1200) ∪ [1500,1550) = 900 µs; NCCL [450,600), [650,750),
//   [850,900), [1200,1500) = 600 µs; exposed 150 + 0 + 50 + 300 = 500 µs.
// Step 1 (rank 0 by launch, rank 1 by GPU annotation): rank 0 spans [0,950) = 950 µs with compute 750,
//   rank 1 [0,900) with compute 650 → slowest rank 0. Its NCCL calls, paired in order: the all-reduce
//   enters at 400 on rank 0 and 450 on rank 1 (rank 0 waits 50 µs), the all-gather at 650 on both,
//   the reduce-scatter at 850 on both → straggler rank 1, 50 µs of waiting caused. Step 2: rank 0
//   [1000,1500) = 500 µs; rank 1 [1000,1550) = 550 µs → slowest rank 1; the all-reduce enters at
//   1300 on rank 0 and 1200 on rank 1 (rank 1 waits 100 µs) → straggler rank 0, 100 µs caused.
import { describe, expect, test } from 'vitest';
import { analyseMeasured } from '../../../src/kineto/measured-analysis.ts';
import { loadJob } from './kineto-fixtures.ts';

const near = (x: number | null | undefined, want: number) => expect(x).toBeCloseTo(want, 9);

describe('exposed communication of a measured job', () => {
  test('per rank, exposed communication is the NCCL time no compute kernel covers', async () => {
    const a = analyseMeasured(await loadJob('tp2-rank0.json', 'tp2-rank1.json.gz'));
    const [r0, r1] = a.ranks;
    near(r0!.computeMs, 1.05);
    near(r0!.commMs, 0.55);
    near(r0!.exposedMs, 0.35);
    near(r0!.memoryMs, 0.05);
    near(r1!.computeMs, 0.9);
    near(r1!.commMs, 0.6);
    near(r1!.exposedMs, 0.5);
    expect(a.worstRank).toBe(1);
  });

  test('the overlap ratio is the share of communication hidden under compute', async () => {
    const a = analyseMeasured(await loadJob('tp2-rank0.json', 'tp2-rank1.json'));
    near(a.ranks[0]!.overlap, 1 - 0.35 / 0.55);
    near(a.ranks[1]!.overlap, 1 - 0.5 / 0.6);
  });

  test('per-collective totals over both ranks', async () => {
    const a = analyseMeasured(await loadJob('tp2-rank0.json', 'tp2-rank1.json'));
    const by = Object.fromEntries(a.collectives.map((c) => [c.collective, c]));
    expect(Object.keys(by).sort()).toEqual(['allGather', 'allReduce', 'reduceScatter']);
    expect(by.allReduce).toMatchObject({ count: 4, group: 'TENSOR_MODEL_PARALLEL_GROUP', bytes: 4 * 2097152 });
    near(by.allReduce!.ms, 0.2 + 0.2 + 0.15 + 0.3);
    near(by.allReduce!.exposedMs, 0.1 + 0.2 + 0.15 + 0.3);
    near(by.allGather!.exposedMs, 0);
    near(by.reduceScatter!.exposedMs, 0.1);
  });

  test('per step: the ranks, the slowest rank and the straggler', async () => {
    const a = analyseMeasured(await loadJob('tp2-rank0.json', 'tp2-rank1.json'));
    expect(a.steps.map((s) => [s.step, s.slowestRank, s.straggler])).toEqual([
      [1, 0, 1],
      [2, 1, 0],
    ]);
    near(a.steps[0]!.stragglerCausedMs, 0.05);
    near(a.steps[1]!.stragglerCausedMs, 0.1);
    near(a.steps[0]!.spanMs, 0.95);
    near(a.steps[1]!.spanMs, 0.55);
    const [s1r0, s1r1] = a.steps[0]!.ranks;
    near(s1r0!.computeMs, 0.75);
    near(s1r0!.exposedMs, 0.15);
    near(s1r1!.computeMs, 0.65);
    near(s1r1!.exposedMs, 0.2);
    near(a.steps[1]!.ranks[1]!.exposedMs, 0.3);
  });

  test('a memset is neither compute nor communication; an old-style NCCL name is still communication', async () => {
    const a = analyseMeasured(await loadJob('single-no-dist.json'));
    // kernel [0,100) µs, ncclKernel_AllReduce [50,200), memset [150,160): exposed [100,200).
    near(a.ranks[0]!.exposedMs, 0.1);
    near(a.ranks[0]!.overlap, 1 / 3);
    expect(a.collectives.map((c) => [c.collective, c.group, c.bytes])).toEqual([['allReduce', '', 0]]);
    expect(a.steps).toEqual([]);
  });
});
