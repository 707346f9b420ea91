import { describe, expect, test } from 'vitest';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { kvGroupsOfRank, paddedVocab, rankOwnership } from '../../../src/parallel/ownership.ts';

describe('paddedVocab', () => {
  test('rounds the vocabulary up to a multiple of t and keeps 0 as no vocabulary', () => {
    expect(paddedVocab({ vocab: 30, tp: 4 })).toBe(32);
    expect(paddedVocab({ vocab: 32, tp: 4 })).toBe(32);
    expect(paddedVocab({ vocab: 1, tp: 8 })).toBe(8);
    expect(paddedVocab({ vocab: 0, tp: 8 })).toBe(0);
  });
});

describe('kvGroupsOfRank', () => {
  test('gives each rank groups/t contiguous groups when groups ≥ t', () => {
    expect([0, 1].map((r) => kvGroupsOfRank(r, 4, 2))).toEqual([
      [0, 1],
      [2, 3],
    ]);
  });

  test('gives each rank the one group its heads use when groups < t', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7].map((r) => kvGroupsOfRank(r, 2, 8))).toEqual([
      [0],
      [0],
      [0],
      [0],
      [1],
      [1],
      [1],
      [1],
    ]);
  });
});

describe('rankOwnership', () => {
  test('splits heads, linear_qkv output columns (W/t each), FFN columns, padded vocabulary rows and (with SP) tokens into contiguous ranges', () => {
    const own = rankOwnership(configFromPreset('classroom', { tp: 4, sp: true, vocab: 30 }));
    expect(own).toEqual([
      { rank: 0, heads: [0, 1], kvGroups: [0], qkvCols: [0, 8], ffn: [0, 8], vocab: [0, 8], tokens: [0, 2] },
      { rank: 1, heads: [1, 2], kvGroups: [0], qkvCols: [8, 16], ffn: [8, 16], vocab: [8, 16], tokens: [2, 4] },
      { rank: 2, heads: [2, 3], kvGroups: [1], qkvCols: [16, 24], ffn: [16, 24], vocab: [16, 24], tokens: [4, 6] },
      { rank: 3, heads: [3, 4], kvGroups: [1], qkvCols: [24, 32], ffn: [24, 32], vocab: [24, 32], tokens: [6, 8] },
    ]);
  });

  test('gives every rank all tokens without SP and an empty vocabulary range without a vocabulary', () => {
    const own = rankOwnership(configFromPreset('gpt2-layer', { tp: 2 }));
    expect(own.map((o) => [o.tokens, o.vocab])).toEqual([
      [
        [0, 32],
        [0, 0],
      ],
      [
        [0, 32],
        [0, 0],
      ],
    ]);
  });

  test("each rank's query heads all belong to the KV groups its attention reads", () => {
    for (const [heads, groups, t] of [
      [8, 2, 8],
      [8, 2, 2],
      [8, 8, 4],
      [12, 4, 4],
      [12, 3, 6],
    ]) {
      const c = configFromPreset('gpt2-layer', { heads, groups, tp: t, h: 16 * heads });
      for (const o of rankOwnership(c)) {
        for (let q = o.heads[0]; q < o.heads[1]; q++) expect(o.kvGroups).toContain(Math.floor(q / (heads / groups)));
      }
    }
  });
});
