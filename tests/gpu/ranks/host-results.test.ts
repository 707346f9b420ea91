import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { RankPool } from '../../../src/ranks/pool.ts';
import { poolTransports, randomArray, rejectionOf } from './helpers.ts';
import type { seriesPrograms } from './series.worker.ts';

const t = 4;
// Odd-sized (chunks of unequal length) and large enough that each chunk spans many SIMD steps.
const n = (1 << 16) + 3;
const calls = 3;
// Integers below 2¹⁰ (+ 0 turns a rounded −0 into 0): their sums are exact in float32, so results
// are compared bit for bit.
const inputs = Array.from({ length: calls }, (_, c) =>
  Array.from({ length: t }, (_, r) => randomArray(n, 10 * c + r + 1).map((v) => Math.round(v * 1000) + 0)),
);
const sums = inputs.map((xs) => Array.from({ length: n }, (_, i) => xs.reduce((s, x) => s + x[i], 0)));

describe.each(poolTransports)('host all-reduce results over %s', (transport) => {
  let pool: RankPool<typeof seriesPrograms>;
  beforeAll(async () => {
    pool = await RankPool.create<typeof seriesPrograms>({
      size: t,
      transport,
      timeoutMs: 5_000,
      commCapacityBytes: 1 << 20,
      createWorker: () => new Worker(new URL('./series.worker.ts', import.meta.url), { type: 'module' }),
    });
  });
  afterAll(async () => {
    await pool?.dispose();
  });

  test("results in new memory are not aliased: each call's result still holds its own sum after the later calls, and the inputs are untouched", async () => {
    const replies = await pool.run('allReduceSeries', (r) => ({
      inputs: inputs.map((xs) => xs[r]),
      reuse: false,
    }));
    replies.forEach((reply, r) => {
      expect(reply.wrapsOut).toEqual(Array(calls).fill(false));
      reply.results.forEach((y, c) => expect(Array.from(y), `rank ${r} call ${c}`).toEqual(sums[c]));
      reply.inputs.forEach((x, c) => expect(Array.from(x), `rank ${r} input ${c}`).toEqual(Array.from(inputs[c][r])));
    });
  });

  test("results into one caller's array: every call returns that array, which holds the exact sum of the last call, and the inputs are untouched", async () => {
    const replies = await pool.run('allReduceSeries', (r) => ({
      inputs: inputs.map((xs) => xs[r]),
      reuse: true,
    }));
    replies.forEach((reply, r) => {
      expect(reply.wrapsOut).toEqual(Array(calls).fill(true));
      expect(Array.from(reply.results[calls - 1]), `rank ${r}`).toEqual(sums[calls - 1]);
      reply.inputs.forEach((x, c) => expect(Array.from(x), `rank ${r} input ${c}`).toEqual(Array.from(inputs[c][r])));
    });
  });

  // Last: a failed program leaves the pool broken.
  test("a caller's array of the wrong length is refused on every rank with both lengths named", async () => {
    const e = await rejectionOf(
      pool.run('collective', {
        op: 'allGather',
        device: 'cpu',
        shape: [4],
        dim: 0,
        result: 'in-place',
        data: new Float32Array(4),
      }),
    );
    expect(e.message).toContain(
      `allGather: the result array holds 4 values, but the result [${4 * t}] has ${4 * t}; pass an array of that length.`,
    );
    expect(e.errors!.every((x) => x)).toBe(true);
  });
});
