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
      'gbatch (48 sequences) must be a multiple of b·DP = 32 for every t of 1, 2, 4, 8 on the GPU budget (b = 4, N = 8): use 32 or 64, or change b or the GPU budget N.',
    );
    expect(() => resolveGlobalBatch(10, 4, 8, budgetDegrees(8))).toThrow(/use 32, or change b/);
  });

  it('with p pipeline stages: t·p divides N, DP = N/(t·p), auto stays b·N (m = t·p)', () => {
    expect(budgetDegrees(8, 4)).toEqual([1, 2]);
    expect(budgetDegrees(8, 3)).toEqual([]);
    // b = 8, N = 8, p = 4: DP = 2 at t = 1 (b·DP = 16), 1 at t = 2 (8); auto = 64, m = 4 and 8.
    expect(resolveGlobalBatch('auto', 8, 8, budgetDegrees(8, 4), 4)).toBe(64);
    expect(resolveGlobalBatch(16, 8, 8, budgetDegrees(8, 4), 4)).toBe(16);
    expect(() => resolveGlobalBatch(24, 8, 8, budgetDegrees(8, 4), 4)).toThrow(
      'gbatch (24 sequences) must be a multiple of b·DP = 16 for every t of 1, 2 on the GPU budget (b = 8, N = 8, p = 4): use 16 or 32, or change b or the GPU budget N.',
    );
  });
});
