import { describe, expect, test } from 'vitest';
import { checkInteger, packParams, rowGrid, rowLanes } from '../../../src/kernels/rowwise.ts';

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

  test('packParams lays u32, i32 and f32 words out in order, padded to 16 bytes', () => {
    const words = packParams([
      ['u32', 7],
      ['i32', -2],
      ['f32', 0.5],
    ]);
    expect(words.length).toBe(4);
    expect(words[0]).toBe(7);
    expect(new Int32Array(words.buffer)[1]).toBe(-2);
    expect(new Float32Array(words.buffer)[2]).toBe(0.5);
    expect(words[3]).toBe(0);
    expect(packParams(new Array(5).fill(['u32', 1])).length).toBe(8);
  });

  test('checkInteger names the option and its allowed range', () => {
    expect(() => checkInteger('rope', 'positionOffset', 1.5, 0, 10)).toThrow(
      /rope: option "positionOffset" is 1.5; it must be an integer in \[0, 10\]/,
    );
    expect(() => checkInteger('rope', 'positionOffset', 3, 0, 10)).not.toThrow();
  });
});
