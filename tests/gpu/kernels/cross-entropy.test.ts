import { describe, expect, test } from 'vitest';
import {
  crossEntropyGrad,
  crossEntropyLocalMax,
  crossEntropyLocalSumExp,
  crossEntropyLoss,
  crossEntropyTargetLogit,
} from '../../../src/kernels/cross-entropy.ts';
import type { KernelContext } from '../../../src/kernels/context.ts';
import { float32Tolerance } from '../../../src/reference/compare.ts';
import {
  ceGradRef,
  ceLocalMaxRef,
  ceLocalSumExpRef,
  ceTargetLogitRef,
  crossEntropyRef,
} from '../../../src/reference/cross-entropy.ts';
import { randomArray, rng } from '../../../src/reference/random.ts';
import { download, expectClose, gpuCase, upload } from '../gpu-case.ts';

const eps = 2 ** -23;
const xMax = 8; // logits uniform in [−8, 8): every exp argument a − m lies in [−16, 0]

// Tolerances. Max and target pick copy a float32 value: exact (0). Σ exp(x − m): vl terms ≤ 1,
// each exp accurate to (3 + 2·16) ulp, plus the sum: ε·35·S + float32Tolerance(vl). Gradient: one
// exp, one divide, one subtract, one multiply: |scale|·ε·(35 + 4). Loss: WGSL log is 2^−21 absolute
// near 1 and 3 ulp elsewhere, then two adds of values ≤ ~20: 2^−21 + 3ε·log S + 4ε·20.
const sumTol = (vl: number, s: number): number => eps * 35 * s + float32Tolerance(vl);
const gradTol = (scale: number): number => Math.abs(scale) * eps * 39;
const lossTol = 2 ** -21 + eps * 3 * 10 + eps * 80;

function targetsFor(rows: number, vocab: number, seed: number): Float32Array {
  const next = rng(seed);
  return Float32Array.from({ length: rows }, () => Math.floor(next() * vocab));
}

/** Runs the four per-rank pieces with the given global max / sum and returns all outputs. */
async function pieces(
  ctx: KernelContext,
  x: Float32Array,
  rows: number,
  vl: number,
  v0: number,
  t: Float32Array,
  m: ArrayLike<number>,
  s: ArrayLike<number>,
  scale: number,
) {
  const xt = upload(ctx, 'logits', [rows, vl], x),
    tt = upload(ctx, 'targets', [rows], t);
  const mt = upload(ctx, 'globalMax', [rows], Float32Array.from(m)),
    st = upload(ctx, 'globalSum', [rows], Float32Array.from(s));
  const mx = upload(ctx, 'localMax', [rows], new Float32Array(rows)),
    se = upload(ctx, 'localSum', [rows], new Float32Array(rows));
  const tl = upload(ctx, 'targetLogit', [rows], new Float32Array(rows)),
    dx = upload(ctx, 'dLogits', [rows, vl], new Float32Array(rows * vl));
  crossEntropyLocalMax(ctx, xt, mx);
  crossEntropyLocalSumExp(ctx, xt, mt, se);
  crossEntropyTargetLogit(ctx, xt, tt, tl, { vocabStart: v0 });
  crossEntropyGrad(ctx, xt, tt, mt, st, dx, { vocabStart: v0, scale });
  return {
    max: await download(ctx, mx),
    sum: await download(ctx, se),
    target: await download(ctx, tl),
    grad: await download(ctx, dx),
  };
}

describe('cross-entropy pieces', () => {
  for (const [rows, vl, v0] of [
    [1, 1, 0],
    [7, 33, 40],
    [300, 5, 3],
    [2, 3000, 1000],
  ]) {
    test(`each piece matches its CPU twin for logits [${rows}, ${vl}] holding vocab ids from ${v0}`, async () => {
      await gpuCase(async (ctx) => {
        const x = randomArray(rows * vl, 71 + vl, xMax);
        const t = targetsFor(rows, v0 + vl + 7, 72 + vl); // some targets fall outside [v0, v0 + vl)
        const m = ceLocalMaxRef(x, vl).map((v) => v + 0.5),
          s = ceLocalSumExpRef(x, vl, m).map((v) => v + 2); // stand-ins for global values
        const got = await pieces(ctx, x, rows, vl, v0, t, m, s, 1 / rows);
        expectClose('local max', got.max, ceLocalMaxRef(x, vl), 0);
        expectClose('local sum', got.sum, ceLocalSumExpRef(x, vl, Float32Array.from(m)), sumTol(vl, Math.max(...s)));
        expectClose('target logit', got.target, ceTargetLogitRef(x, vl, t, v0), 0);
        expectClose(
          'grad',
          got.grad,
          ceGradRef(x, vl, t, v0, Float32Array.from(m), Float32Array.from(s), 1 / rows),
          gradTol(1 / rows),
        );
      });
    });
  }

  test("a target outside this rank's vocab range picks 0 and leaves no one-hot in the gradient", async () => {
    await gpuCase(async (ctx) => {
      const x = Float32Array.from([1, 2, 3, 4, 5, 6]),
        t = Float32Array.from([2, 5]);
      const got = await pieces(ctx, x, 2, 3, 3, t, [3, 6], [1, 1], 1);
      expect(Array.from(got.target)).toEqual([0, 6]);
      expectClose('grad', got.grad, [Math.exp(-2), Math.exp(-1), 1, Math.exp(-2), Math.exp(-1), 0], 4 * eps);
    });
  });

  test('three GPU vocab shards, reduced like the all-reduces, give the unsharded loss and gradient', async () => {
    await gpuCase(async (ctx) => {
      const rows = 5,
        vocab = 37,
        scale = 1 / rows;
      const logits = randomArray(rows * vocab, 81, xMax),
        t = targetsFor(rows, vocab, 82);
      const shards = [
        [0, 13],
        [13, 25],
        [25, 37],
      ].map(([v0, v1]) => {
        const x = new Float32Array(rows * (v1 - v0));
        for (let r = 0; r < rows; r++) x.set(logits.subarray(r * vocab + v0, r * vocab + v1), r * (v1 - v0));
        return { v0, vl: v1 - v0, x };
      });
      const zero = new Float64Array(rows),
        one = new Float64Array(rows).fill(1);
      const m = new Float64Array(rows).fill(-Infinity);
      for (const sh of shards)
        (await pieces(ctx, sh.x, rows, sh.vl, sh.v0, t, zero, one, scale)).max.forEach(
          (v, r) => (m[r] = Math.max(m[r], v)),
        );
      const s = new Float64Array(rows),
        z = new Float64Array(rows),
        grads: Float32Array[] = [];
      for (const sh of shards) {
        const got = await pieces(ctx, sh.x, rows, sh.vl, sh.v0, t, m, one, scale);
        got.sum.forEach((v, r) => (s[r] += v));
        got.target.forEach((v, r) => (z[r] += v));
      }
      for (const sh of shards) grads.push((await pieces(ctx, sh.x, rows, sh.vl, sh.v0, t, m, s, scale)).grad);
      const loss = upload(ctx, 'loss', [rows], new Float32Array(rows));
      crossEntropyLoss(
        ctx,
        upload(ctx, 'm', [rows], Float32Array.from(m)),
        upload(ctx, 'S', [rows], Float32Array.from(s)),
        upload(ctx, 'z', [rows], Float32Array.from(z)),
        loss,
      );
      const whole = crossEntropyRef(logits, vocab, t, scale);
      // The sum S is rounded to float32 across shards (3 partial sums): sumTol(vocab) bounds it, and
      // log S then moves by sumTol/S ≤ sumTol (S ≥ 1).
      expectClose('loss', await download(ctx, loss), whole.loss, lossTol + sumTol(vocab, vocab));
      const grad = new Float32Array(rows * vocab);
      shards.forEach((sh, k) => {
        for (let r = 0; r < rows; r++) grad.set(grads[k].subarray(r * sh.vl, (r + 1) * sh.vl), r * vocab + sh.v0);
      });
      expectClose('grad', grad, whole.grad, gradTol(scale) + scale * sumTol(vocab, vocab));
    });
  });

  test('mismatched shapes are refused before dispatch, naming the tensor', async () => {
    await gpuCase(async (ctx) => {
      const x = upload(ctx, 'logits', [4, 10], new Float32Array(40));
      const r4 = upload(ctx, 'max', [4], new Float32Array(4)),
        r5 = upload(ctx, 'targets', [5], new Float32Array(5));
      expect(() => crossEntropyLocalMax(ctx, x, r5)).toThrow(
        /crossEntropyLocalMax: tensor "targets" has shape \[5\] but \[4\] is required \(one value per row of "logits"\)/,
      );
      expect(() => crossEntropyLocalSumExp(ctx, x, r5, r4)).toThrow(
        /crossEntropyLocalSumExp: tensor "targets" has shape \[5\] but \[4\] is required/,
      );
      expect(() => crossEntropyTargetLogit(ctx, x, r5, r4)).toThrow(
        /crossEntropyTargetLogit: tensor "targets" has shape \[5\] but \[4\] is required/,
      );
      expect(() => crossEntropyGrad(ctx, x, r4, r4, r4, r4)).toThrow(
        /crossEntropyGrad: tensor "max" has shape \[4\] but \[4, 10\] is required/,
      );
      expect(() => crossEntropyLoss(ctx, r4, r4, r5, r4)).toThrow(
        /crossEntropyLoss: tensor "targets" has shape \[5\] but \[4\] is required/,
      );
    });
  });
});
