import { describe, expect, test } from 'vitest';
import {
  bucketEndDivisor,
  bucketShard,
  flattenParams,
  gradBufferLayout,
  unflattenParams,
} from '../../../src/mesh/grad-buckets.ts';

// Registration order a, b, c, d: Megatron places them d, c, b, a (backward's order).
const params = [
  { name: 'a', numel: 100 },
  { name: 'b', numel: 30 },
  { name: 'c', numel: 70 },
  { name: 'd', numel: 50 },
];

describe('the gradient buffer as plain DDP lays it out', () => {
  test('one bucket without a bucket size, parameters in reverse order, no padding', () => {
    const l = gradBufferLayout(params, undefined, 4, false);
    expect(l.params.map((p) => [p.name, p.start, p.end, p.bucket])).toEqual([
      ['d', 0, 50, 0],
      ['c', 50, 120, 0],
      ['b', 120, 150, 0],
      ['a', 150, 250, 0],
    ]);
    expect(l.buckets).toEqual([{ start: 0, end: 250, numelUnpadded: 250, params: ['d', 'c', 'b', 'a'] }]);
    expect(l.numel).toBe(250);
  });

  test('a bucket closes after the parameter that brings it to at least the bucket size', () => {
    // 50 < 60; 50 + 70 = 120 ≥ 60: [d, c]; then b 30 < 60, b + a = 130 ≥ 60: [b, a].
    const l = gradBufferLayout(params, 60, 2, false);
    expect(l.buckets.map((b) => [b.start, b.end, b.params])).toEqual([
      [0, 120, ['d', 'c']],
      [120, 250, ['b', 'a']],
    ]);
    // A bucket size of 1 gives every parameter its own bucket.
    expect(gradBufferLayout(params, 1, 2, false).buckets.map((b) => b.params)).toEqual([['d'], ['c'], ['b'], ['a']]);
  });
});

describe('the gradient buffer as the distributed optimizer lays it out', () => {
  test('parameters start on 64-element boundaries and buckets end on multiples of lcm(d, 128)', () => {
    expect(bucketEndDivisor(2)).toBe(128);
    expect(bucketEndDivisor(3)).toBe(384);
    const l = gradBufferLayout(params, 60, 4, true);
    // d [0, 50) · c starts at 64 → [64, 134): 134 ≥ 60 closes, end padded to 256.
    // b [256, 286) · a starts at 320 → [320, 420): 420 − 256 ≥ 60 closes, padded to 512.
    expect(l.params.map((p) => [p.name, p.start, p.end, p.bucket])).toEqual([
      ['d', 0, 50, 0],
      ['c', 64, 134, 0],
      ['b', 256, 286, 1],
      ['a', 320, 420, 1],
    ]);
    expect(l.buckets.map((b) => [b.start, b.end, b.numelUnpadded])).toEqual([
      [0, 256, 134],
      [256, 512, 164],
    ]);
    expect(l.numel).toBe(512);
  });

  test("each rank's shard of a bucket is its equal contiguous slice", () => {
    const l = gradBufferLayout(params, 60, 4, true);
    expect([0, 1, 2, 3].map((r) => bucketShard(l, 1, r))).toEqual([
      { start: 256, end: 320 },
      { start: 320, end: 384 },
      { start: 384, end: 448 },
      { start: 448, end: 512 },
    ]);
    expect(() => bucketShard(gradBufferLayout(params, undefined, 4, false), 0, 0)).toThrow(/not divisible by dp 4/);
  });
});

test('flatten and unflatten are inverse, the padding left zero', () => {
  const l = gradBufferLayout(params, 60, 2, true);
  const values = Object.fromEntries(
    params.map((p, i) => [p.name, Float32Array.from({ length: p.numel }, (_, j) => i * 1000 + j + 1)]),
  );
  const flat = flattenParams(l, values);
  expect(flat.length).toBe(l.numel);
  expect(unflattenParams(l, flat)).toEqual(values);
  const used = l.params.reduce((s, p) => s + p.end - p.start, 0);
  expect(flat.filter((v) => v !== 0).length).toBe(used);
});

test('bad arguments are refused with what to write instead', () => {
  expect(() => gradBufferLayout(params, 0, 2, false)).toThrow(/bucket size 0 must be a whole number/);
  expect(() => gradBufferLayout(params, 10, 0, false)).toThrow(/dp 0 must be a whole number/);
  expect(() => gradBufferLayout([], 10, 2, false)).toThrow(/no parameters/);
});
