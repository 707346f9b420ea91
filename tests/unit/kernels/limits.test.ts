import { describe, expect, test } from 'vitest';
import { checkTensorFits, checkWorkgroups, expectShape } from '../../../src/kernels/limits.ts';
import { numel } from '../../../src/core/shape.ts';

const limits = { maxStorageBufferBindingSize: 1 << 20, maxBufferSize: 1 << 22, maxComputeWorkgroupsPerDimension: 100 };

describe('device limit checks', () => {
  test('a tensor that fits passes and one a byte over names the tensor, its shape and the limit', () => {
    expect(() => checkTensorFits(limits, 'gemm', 'W', [256, 1024])).not.toThrow();
    expect(() => checkTensorFits(limits, 'gemm', 'W', [257, 1024])).toThrow(
      'gemm: tensor "W" of shape [257, 1024] needs 1052672 bytes, more than this device\'s maxStorageBufferBindingSize of 1048576 bytes',
    );
  });

  test('the smaller of maxBufferSize and maxStorageBufferBindingSize is the one reported', () => {
    expect(() => checkTensorFits({ ...limits, maxBufferSize: 1024 }, 'add', 'x', [257])).toThrow(
      /maxBufferSize of 1024 bytes/,
    );
  });

  test('negative or fractional dimensions are refused', () => {
    expect(() => checkTensorFits(limits, 'rope', 'q', [4, -1])).toThrow(
      /every dimension must be a non-negative integer/,
    );
    expect(() => checkTensorFits(limits, 'rope', 'q', [4, 1.5])).toThrow(/non-negative integer/);
  });

  test('workgroup counts past the per-dimension limit name the dimension', () => {
    expect(() => checkWorkgroups(limits, 'gemm', 'C', [8, 8], [100, 1, 1], ['x', 'y', 'z'])).not.toThrow();
    expect(() => checkWorkgroups(limits, 'gemm', 'C', [8, 8], [1, 101, 1], ['x', 'M/64', 'z'])).toThrow(
      /needs 101 workgroups along M\/64, more than this device's maxComputeWorkgroupsPerDimension of 100/,
    );
  });

  test('expectShape explains which shape is required and why', () => {
    expect(() => expectShape('swiglu', 'U', [4, 6], [4, 8], 'same shape as "G"')).toThrow(
      'swiglu: tensor "U" has shape [4, 6] but [4, 8] is required (same shape as "G").',
    );
    expect(numel([])).toBe(1);
    expect(numel([3, 0, 2])).toBe(0);
  });
});
