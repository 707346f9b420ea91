import { describe, expect, test } from 'vitest';
import {
  collectiveFromTorchName,
  isNcclKernel,
  ncclCall,
  parseNcclKernelName,
} from '../../../src/kineto/nccl-kernel.ts';

describe('NCCL kernel names', () => {
  test('an NCCL ≤ 2.18 name gives collective, algorithm, protocol, reduction and type', () => {
    expect(parseNcclKernelName('ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)')).toEqual({
      collective: 'allReduce',
      algorithm: 'RING',
      protocol: 'LL',
      reduction: 'Sum',
      dtype: 'float32',
    });
  });
  test('an NCCL ≥ 2.19 name puts reduction and type first', () => {
    expect(
      parseNcclKernelName('ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL128(ncclDevComm*, unsigned long, ncclWork*)'),
    ).toEqual({
      collective: 'reduceScatter',
      reduction: 'Sum',
      dtype: 'bfloat16',
      algorithm: 'RING',
      protocol: 'LL128',
    });
  });
  test('an all-gather carries no reduction or type; a two-word algorithm is kept whole', () => {
    expect(parseNcclKernelName('ncclDevKernel_AllGather_COLLNET_DIRECT_SIMPLE(ncclDevComm*)')).toEqual({
      collective: 'allGather',
      algorithm: 'COLLNET_DIRECT',
      protocol: 'SIMPLE',
    });
  });
  test('the __nv_bfloat16 spelling is bfloat16', () => {
    expect(parseNcclKernelName('ncclKernel_AllReduce_TREE_SIMPLE_Sum___nv_bfloat16(ncclWorkElem)').dtype).toBe(
      'bfloat16',
    );
  });
  test('a generic kernel says nothing about its collective', () => {
    expect(parseNcclKernelName('ncclDevKernel_Generic(ncclDevComm*, unsigned long, ncclWork*)').collective).toBe(
      'unknown',
    );
  });
  test('only ncclKernel_ and ncclDevKernel_ names are NCCL kernels', () => {
    expect(isNcclKernel('ncclDevKernel_SendRecv(ncclDevComm*)')).toBe(true);
    expect(isNcclKernel('ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)')).toBe(true);
    expect(isNcclKernel('void at::native::vectorized_elementwise_kernel<4>')).toBe(false);
  });
});

describe('collective args', () => {
  test('torch collective names map to the collective', () => {
    expect(
      [
        'allreduce',
        '_allgather_base',
        'reduce_scatter_tensor_coalesced',
        'all_to_all',
        'send',
        'broadcast',
        'barrier',
        'reduce',
      ].map(collectiveFromTorchName),
    ).toEqual(['allReduce', 'allGather', 'reduceScatter', 'allToAll', 'sendRecv', 'broadcast', 'barrier', 'reduce']);
  });
  test('the message size is max(in, out) elements times the dtype size (nccl-tests convention)', () => {
    const c = ncclCall('ncclDevKernel_AllGather_RING_LL(ncclDevComm*)', {
      'Collective name': '_allgather_base',
      'In msg nelems': 524288,
      'Out msg nelems': 1048576,
      'Group size': 2,
      dtype: 'BFloat16',
      'Process Group Description': 'TENSOR_MODEL_PARALLEL_GROUP',
    });
    expect(c).toMatchObject({
      collective: 'allGather',
      dtype: 'bfloat16',
      bytes: 2 * 1048576,
      groupSize: 2,
      groupDesc: 'TENSOR_MODEL_PARALLEL_GROUP',
    });
  });
  test('args win over the name where both speak', () => {
    expect(ncclCall('ncclDevKernel_Generic(ncclDevComm*)', { 'Collective name': 'allreduce' }).collective).toBe(
      'allReduce',
    );
  });
  test('without args there is no size', () => {
    expect(ncclCall('ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)', undefined).bytes).toBeUndefined();
  });
});
