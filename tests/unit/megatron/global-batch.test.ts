import { describe, expect, it } from 'vitest';
import { budgetDegrees, parseGlobalBatch, resolveGlobalBatch } from '../../../src/megatron/global-batch.ts';

describe('global batch of the fixed-budget table', () => {
  it('parses auto and whole numbers, and names a bad value', () => {
    expect(parseGlobalBatch('auto')).toBe('auto');
    expect(parseGlobalBatch('64')).toBe(64);
    expect(() => parseGlobalBatch('0')).toThrow(/gbatch must be a whole number ≥ 1, got "0"/);
    expect(() => parseGlobalBatch('1.5')).toThrow(/gbatch must be a whole number/);
    expect(() => parseGlobalBatch('lots')).toThrow(/gbatch must be a whole number/);
  });

  it('defaults to b·N', () => {
    expect(resolveGlobalBatch('auto', 4, 8, budgetDegrees(8))).toBe(32);
  });

  it('accepts a multiple of b·DP for every t (b·N when t = 1 is a row)', () => {
    expect(budgetDegrees(8)).toEqual([1, 2, 4, 8]);
    expect(resolveGlobalBatch(96, 4, 8, budgetDegrees(8))).toBe(96);
    // Without t = 1 the largest b·DP is b·N/2: 4·8/2 = 16.
    expect(resolveGlobalBatch(48, 4, 8, [2, 4, 8])).toBe(48);
  });

  it('refuses a value some row cannot split into whole micro-batches, naming what to use', () => {
    // t = 1: DP = 8, b·DP = 32; 48 / 32 is not whole.
    expect(() => resolveGlobalBatch(48, 4, 8, budgetDegrees(8))).toThrow(
      'gbatch (48 sequences) must be a multiple of b·DP = 32 for every t in the table (1, 2, 4, 8; b = 4, N = 8): use 32 or 64, or change b or the GPU budget N.',
    );
    expect(() => resolveGlobalBatch(10, 4, 8, budgetDegrees(8))).toThrow(/use 32, or change b/);
  });
});
