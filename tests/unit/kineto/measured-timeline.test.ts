import { describe, expect, test } from 'vitest';
import { measuredTimeline, shortKernelName } from '../../../src/kineto/measured-timeline.ts';
import { loadJob } from './kineto-fixtures.ts';

describe('a measured window as the timeline draws it', () => {
  test('kernel names lose return type, namespaces, template arguments and parameters', () => {
    expect(
      shortKernelName(
        'void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>)',
      ),
    ).toBe('vectorized_elementwise_kernel');
    expect(shortKernelName('ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)')).toBe(
      'ncclDevKernel_AllReduce_Sum_bf16_RING_LL',
    );
    expect(shortKernelName('volta_sgemm_128x64_nn')).toBe('volta_sgemm_128x64_nn');
  });

  test('step 2 starts at 0 and carries the exposed parts of each NCCL kernel (copies are not drawn)', async () => {
    const tl = measuredTimeline(await loadJob('tp2-rank0.json', 'tp2-rank1.json'), 2);
    expect(tl.rankIds).toEqual([0, 1]);
    expect(tl.originMs).toBeCloseTo(1.0, 9);
    // Step 2 (µs after its start): rank 0 GEMM [0,300), all-reduce [300,500) exposed whole; rank 1
    // GEMM [0,200), all-reduce [200,500) exposed whole, Adam [500,550).
    const comm = tl.events.filter((e) => e.stream === 'comm');
    expect(comm.map((e) => [e.rank, e.exposed.map((x) => [x.t0, x.t1].map((v) => Math.round(v * 1000)))])).toEqual([
      [0, [[300, 500]]],
      [1, [[200, 500]]],
    ]);
    expect(tl.totals.map((t) => Math.round(t.exposedMs * 1000))).toEqual([200, 300]);
    expect(tl.stepMs).toBeCloseTo(0.55, 9);
    expect(tl.slowestRank).toBe(1);
    expect(tl.events.every((e) => e.slice.work !== 'memcpy')).toBe(true);
  });

  test('a window with more kernels than drawn keeps the earliest and counts the rest', async () => {
    const tl = measuredTimeline(await loadJob('tp2-rank0.json', 'tp2-rank1.json'), undefined, 5);
    expect(tl.events).toHaveLength(5);
    expect(tl.omitted).toBe(18 - 5);
    expect(Math.max(...tl.events.map((e) => e.t0))).toBeLessThanOrEqual(0.45);
    // The totals still cover every kernel of the window.
    expect(tl.totals.map((t) => Math.round(t.exposedMs * 1000))).toEqual([350, 500]);
  });
});
