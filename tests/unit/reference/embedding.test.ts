import { describe, expect, test } from 'vitest';
import { embeddingBackwardRef, embeddingRef, localVocabRow } from '../../../src/reference/embedding.ts';
import { randomArray, rng } from '../../../src/reference/random.ts';
import { expectNear, finiteDiffVjp } from '../finite-diff.ts';

/** Vocab split into t contiguous ranges as even as possible: [[v0, v1), …]. */
function split(vocab: number, t: number): [number, number][] {
  return Array.from({ length: t }, (_, k) => [Math.floor((k * vocab) / t), Math.floor(((k + 1) * vocab) / t)]);
}

describe('embedding twins', () => {
  const tokens = 9,
    vocab = 11,
    h = 3;
  const table = randomArray(vocab * h, 11, 2);
  const next = rng(12);
  // Ids drawn from [0, vocab + 3): repeats are certain (9 draws over few ids), and a few lie past the vocabulary.
  const ids = Array.from({ length: tokens }, () => Math.floor(next() * (vocab + 3)));
  ids[0] = ids[1] = 4; // at least one id repeated for the backward sum
  ids[2] = vocab + 1; // at least one id outside every shard
  const dy = randomArray(tokens * h, 13);

  for (const t of [1, 2, 3, 4]) {
    test(`the forward summed over ${t} vocab shard(s) equals the unsharded lookup exactly`, () => {
      const sum = new Float64Array(tokens * h);
      for (const [v0, v1] of split(vocab, t)) {
        embeddingRef(ids, table.subarray(v0 * h, v1 * h), h, v0).forEach((v, i) => (sum[i] += v)); // all-reduce SUM
      }
      // Exactly one shard owns each id; the others add +0: exact.
      expectNear('forward', sum, embeddingRef(ids, table, h), 0);
    });

    test(`the backward over ${t} vocab shard(s), concatenated, equals the unsharded backward exactly`, () => {
      const whole = embeddingBackwardRef(ids, dy, vocab, h);
      for (const [v0, v1] of split(vocab, t)) {
        expectNear(`rows from ${v0}`, embeddingBackwardRef(ids, dy, v1 - v0, h, v0), whole.subarray(v0 * h, v1 * h), 0);
      }
    });
  }

  test('the backward equals finite differences of <dy, embedding(table)> with respect to the table', () => {
    const v0 = 2,
      vl = 7; // a shard: ids below 2 and from 9 on are out of range
    const shard = table.subarray(v0 * h, (v0 + vl) * h);
    const fd = finiteDiffVjp((w) => embeddingRef(ids, w, h, v0), shard, dy);
    // The lookup is linear in the table: central differences carry only rounding, ~ε·|dy·out|/h ≈ 1e-11.
    expectNear('dtable', embeddingBackwardRef(ids, dy, vl, h, v0), fd, 1e-9);
  });

  test("a repeated id receives the sum of its tokens' gradients", () => {
    const got = embeddingBackwardRef([1, 0, 1, 1], [1, 2, 3, 4, 5, 6, 7, 8], 2, 2);
    expect(Array.from(got)).toEqual([3, 4, 1 + 5 + 7, 2 + 6 + 8]);
  });

  test('accumulating adds the sums to the previous gradient', () => {
    const got = embeddingBackwardRef([1, 1], [1, 2, 3, 4], 2, 2, 0, [10, 20, 30, 40]);
    expect(Array.from(got)).toEqual([10, 20, 30 + 4, 40 + 6]);
  });

  test("negative, fractional, non-finite and past-the-range ids are in no rank's range, while -0 is id 0", () => {
    const bad = [-1, 2.5, NaN, Infinity, -Infinity, 5, 2 ** 24];
    expect(bad.map((id) => localVocabRow(id, 0, 5))).toEqual(bad.map(() => -1));
    expect(localVocabRow(-0, 0, 5)).toBe(0);
    expect(Array.from(embeddingRef([-1, 2.5, NaN, 1], [1, 2], 1))).toEqual([0, 0, 0, 2]);
    expect(Array.from(embeddingBackwardRef([-1, 2.5, NaN, 1], [1, 2, 3, 4], 2, 1))).toEqual([0, 4]);
  });
});
