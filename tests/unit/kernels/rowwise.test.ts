import { describe, expect, test } from 'vitest';
import { checkInteger, rowGrid, rowLanes } from '../../../src/kernels/rowwise.ts';

const limits = { maxStorageBufferBindingSize: 2 ** 27, maxBufferSize: 2 ** 28, maxComputeWorkgroupsPerDimension: 100 };

describe('row-kernel helpers', () => {
  test('rowLanes gives a power of two near cols/8, from 1 up to 256', () => {
    expect([1, 8, 9, 100, 1024, 2048, 100000].map(rowLanes)).toEqual([1, 1, 2, 16, 128, 256, 256]);
  });

  test('rowGrid gives one workgroup per row, folded past the per-dimension limit', () => {
    expect(rowGrid(limits, 'softmax', 'x', [250, 3], 250)).toEqual([100, 3, 1]);
    expect(rowGrid(limits, 'softmax', 'x', [0, 3], 0)).toEqual([0, 0, 1]);
  });

  test('rowGrid refuses more rows than the folded grid holds, naming the tensor and the limit', () => {
    expect(() => rowGrid(limits, 'rmsnorm', 'hidden', [10001, 8], 10001)).toThrow(
      /rmsnorm: tensor "hidden" of shape \[10001, 8\] needs 101 workgroups along y \(items folded\), more than this device's maxComputeWorkgroupsPerDimension of 100/,
    );
  });

  test('checkInteger names the option and its allowed range', () => {
    expect(() => checkInteger('rope', 'positionOffset', 1.5, 0, 10)).toThrow(
      /rope: option "positionOffset" is 1.5; it must be an integer in \[0, 10\]/,
    );
    expect(() => checkInteger('rope', 'positionOffset', 3, 0, 10)).not.toThrow();
  });
});
