import { describe, expect, test } from 'vitest';
import {
  ceGradRef,
  ceLocalMaxRef,
  ceLocalSumExpRef,
  ceLossRef,
  ceTargetLogitRef,
  crossEntropyRef,
} from '../../../src/reference/cross-entropy.ts';
import { randomArray, rng } from '../../../src/reference/random.ts';
import { expectNear, finiteDiffVjp } from '../finite-diff.ts';

/** Columns [v0, v1) of a [rows, vocab] matrix. */
function columns(x: ArrayLike<number>, rows: number, vocab: number, v0: number, v1: number): Float64Array {
  const out = new Float64Array(rows * (v1 - v0));
  for (let r = 0; r < rows; r++) for (let j = v0; j < v1; j++) out[r * (v1 - v0) + j - v0] = x[r * vocab + j];
  return out;
}

/** Vocab split into t contiguous ranges as even as possible: [[v0, v1), …]. */
function split(vocab: number, t: number): [number, number][] {
  return Array.from({ length: t }, (_, k) => [Math.floor((k * vocab) / t), Math.floor(((k + 1) * vocab) / t)]);
}

describe('cross-entropy twins', () => {
  const rows = 6,
    vocab = 11,
    scale = 1 / rows;
  const logits = randomArray(rows * vocab, 1, 5);
  const next = rng(2);
  const targets = Array.from({ length: rows }, () => Math.floor(next() * vocab));
  const whole = crossEntropyRef(logits, vocab, targets, scale);

  test('the whole loss gradient matches finite differences of scale · Σ loss', () => {
    const fd = finiteDiffVjp((x) => crossEntropyRef(x, vocab, targets).loss, logits, new Array(rows).fill(scale));
    expectNear('grad', whole.grad, fd, 1e-8); // central differences, h = 1e-5: error ~1e-10
  });

  for (const t of [1, 2, 3, 4]) {
    test(`the pieces combined over ${t} vocab shard(s) give the unsharded loss and gradient`, () => {
      const shards = split(vocab, t).map(([v0, v1]) => ({ v0, vl: v1 - v0, x: columns(logits, rows, vocab, v0, v1) }));
      const m = new Float64Array(rows).fill(-Infinity),
        s = new Float64Array(rows),
        z = new Float64Array(rows);
      for (const sh of shards) ceLocalMaxRef(sh.x, sh.vl).forEach((v, r) => (m[r] = Math.max(m[r], v))); // all-reduce MAX
      for (const sh of shards) ceLocalSumExpRef(sh.x, sh.vl, m).forEach((v, r) => (s[r] += v)); //       all-reduce SUM
      for (const sh of shards) ceTargetLogitRef(sh.x, sh.vl, targets, sh.v0).forEach((v, r) => (z[r] += v)); // SUM
      // Float64 sums in a different order: agreement to ~1e-15 relative; 1e-12 absolute on O(1..10) values.
      expectNear('loss', ceLossRef(m, s, z), whole.loss, 1e-12);
      for (const sh of shards) {
        const grad = ceGradRef(sh.x, sh.vl, targets, sh.v0, m, s, scale);
        expectNear(
          `grad of columns from ${sh.v0}`,
          grad,
          columns(whole.grad, rows, vocab, sh.v0, sh.v0 + sh.vl),
          1e-12,
        );
      }
    });
  }

  test('a row whose target lies outside the shard picks 0', () => {
    expect(Array.from(ceTargetLogitRef([1, 2, 3, 4, 5, 6], 3, [2, 5], 3))).toEqual([0, 6]);
  });
});
