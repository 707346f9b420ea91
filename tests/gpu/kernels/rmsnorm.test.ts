import { describe, expect, test } from 'vitest';
import { rmsnorm, rmsnormBackward, rmsnormWeightGrad } from '../../../src/kernels/rmsnorm.ts';
import { float32Tolerance } from '../../../src/reference/compare.ts';
import { randomArray } from '../../../src/reference/random.ts';
import { rmsnormBackwardRef, rmsnormRef } from '../../../src/reference/rmsnorm.ts';
import { download, expectClose, gpuCase, upload } from '../gpu-case.ts';

const eps = 2 ** -23;
const maxAbs = (a: ArrayLike<number>): number => Array.from(a).reduce((m, v) => Math.max(m, Math.abs(v)), 0);

// Tolerances, from the twin's own magnitudes (r = max rstd, q = max|x|·r, G = max|g|, D = max|dy|):
// - rstd: Σx² over h terms ≤ max|x|² has error float32Tolerance(h, max|x|²), relative to the
//   smallest mean square ms_min that is that over h·ms_min; inverseSqrt adds 2 ulp:
//   rel = float32Tolerance(h, max|x|²)/(h·ms_min) + 4ε, and |Δrstd| ≤ r·rel.
// - y = x·rstd·g: |Δy| ≤ q·G·(rel + 3ε).
// - dx = r·dy·g − x·r³·Σ(dy·g·x)/h: the first term carries rel, the second 3·rel plus the sum's
//   float32Tolerance(h): |Δdx| ≤ r·D·G·(1 + 3q²)·(rel + float32Tolerance(h) + 8ε).
// - dg = Σ_rows dy·x·rstd: rows terms ≤ D·q, each off by rel: |Δdg| ≤ rows·D·q·rel + float32Tolerance(rows, D·q).
function tolerances(x: Float32Array, g: Float32Array, h: number, rows: number) {
  const { rstd } = rmsnormRef(x, g, h);
  const r = maxAbs(rstd),
    msMin = 1 / r ** 2,
    q = maxAbs(x) * r,
    G = maxAbs(g),
    D = 1;
  const rel = float32Tolerance(h, maxAbs(x) ** 2) / (h * msMin) + 4 * eps;
  return {
    rstd: r * rel,
    y: q * G * (rel + 3 * eps),
    dx: r * D * G * (1 + 3 * q * q) * (rel + float32Tolerance(h) + 8 * eps),
    dg: rows * D * q * rel + float32Tolerance(rows, D * q),
  };
}

describe('rmsnorm', () => {
  for (const shape of [[1], [3, 7], [2, 5, 33], [400, 4], [2, 3000]]) {
    test(`y, rstd, dx and dg match the CPU twin for shape [${shape}]`, async () => {
      await gpuCase(async (ctx) => {
        const h = shape[shape.length - 1],
          n = shape.reduce((a, d) => a * d, 1),
          rows = n / h;
        const x = randomArray(n, 51 + n, 2),
          g = randomArray(h, 52 + n),
          dyv = randomArray(n, 53 + n);
        const tol = tolerances(x, g, h, rows);
        const want = rmsnormRef(x, g, h);
        const xt = upload(ctx, 'x', shape, x),
          gt = upload(ctx, 'g', [h], g);
        const yt = upload(ctx, 'y', shape, new Float32Array(n)),
          rt = upload(ctx, 'rstd', shape.slice(0, -1), new Float32Array(rows));
        rmsnorm(ctx, xt, gt, yt, rt);
        expectClose('y', await download(ctx, yt), want.y, tol.y);
        expectClose('rstd', await download(ctx, rt), want.rstd, tol.rstd);

        const dy = upload(ctx, 'dy', shape, dyv);
        const dxt = upload(ctx, 'dx', shape, new Float32Array(n)),
          dgt = upload(ctx, 'dg', [h], new Float32Array(h).fill(9));
        rmsnormBackward(ctx, xt, gt, rt, dy, dxt);
        rmsnormWeightGrad(ctx, xt, rt, dy, dgt);
        const grads = rmsnormBackwardRef(x, g, dyv, h);
        expectClose('dx', await download(ctx, dxt), grads.dx, tol.dx);
        expectClose('dg', await download(ctx, dgt), grads.dg, tol.dg);
      });
    });
  }

  test('dg accumulated over token blocks equals dg over all tokens, as sequence-parallel ranks sum it', async () => {
    await gpuCase(async (ctx) => {
      const shape = [10, 2, 6],
        h = 6,
        n = 120,
        rows = 20;
      const x = randomArray(n, 61),
        g = randomArray(h, 62),
        dyv = randomArray(n, 63);
      const xt = upload(ctx, 'x', shape, x),
        gt = upload(ctx, 'g', [h], g),
        dy = upload(ctx, 'dy', shape, dyv);
      const rt = upload(ctx, 'rstd', [10, 2], new Float32Array(rows));
      rmsnorm(ctx, xt, gt, upload(ctx, 'y', shape, new Float32Array(n)), rt);
      const blocks = upload(ctx, 'dgBlocks', [h], new Float32Array(h));
      rmsnormWeightGrad(ctx, xt, rt, dy, blocks, { rowStart: 0, rowEnd: 7 });
      rmsnormWeightGrad(ctx, xt, rt, dy, blocks, { rowStart: 7, rowEnd: 7, accumulate: true });
      rmsnormWeightGrad(ctx, xt, rt, dy, blocks, { rowStart: 7, rowEnd: 20, accumulate: true });
      const tol = tolerances(x, g, h, rows).dg;
      expectClose('Σ blocks', await download(ctx, blocks), rmsnormBackwardRef(x, g, dyv, h).dg, tol);
      const first = upload(ctx, 'dgFirst', [h], new Float32Array(h));
      rmsnormWeightGrad(ctx, xt, rt, dy, first, { rowStart: 0, rowEnd: 7 });
      expectClose(
        'rows [0, 7)',
        await download(ctx, first),
        rmsnormBackwardRef(x.subarray(0, 42), g, dyv.subarray(0, 42), h).dg,
        tol,
      );
    });
  });

  test('eps defaults to 1e-5 and can be set', async () => {
    await gpuCase(async (ctx) => {
      const x = Float32Array.from([1e-3, -1e-3, 2e-3, 0]),
        g = new Float32Array(4).fill(1);
      const xt = upload(ctx, 'x', [1, 4], x),
        gt = upload(ctx, 'g', [4], g);
      const r1 = upload(ctx, 'rstd1', [1], new Float32Array(1)),
        r2 = upload(ctx, 'rstd2', [1], new Float32Array(1));
      rmsnorm(ctx, xt, gt, upload(ctx, 'y1', [1, 4], new Float32Array(4)), r1);
      rmsnorm(ctx, xt, gt, upload(ctx, 'y2', [1, 4], new Float32Array(4)), r2, { eps: 1e-2 });
      expectClose('rstd, eps 1e-5', await download(ctx, r1), rmsnormRef(x, g, 4, 1e-5).rstd, 1e-3);
      expectClose('rstd, eps 1e-2', await download(ctx, r2), rmsnormRef(x, g, 4, 1e-2).rstd, 1e-5);
    });
  });

  test('mismatched shapes and bad row ranges are refused before dispatch, naming the tensor', async () => {
    await gpuCase(async (ctx) => {
      const x = upload(ctx, 'x', [4, 8], new Float32Array(32)),
        y = upload(ctx, 'y', [4, 8], new Float32Array(32));
      const g = upload(ctx, 'normWeight', [4], new Float32Array(4)),
        rstd = upload(ctx, 'rstd', [4], new Float32Array(4));
      const g8 = upload(ctx, 'g8', [8], new Float32Array(8));
      expect(() => rmsnorm(ctx, x, g, y, rstd)).toThrow(
        /rmsnorm: tensor "normWeight" has shape \[4\] but \[8\] is required/,
      );
      expect(() => rmsnorm(ctx, x, g8, y, g8)).toThrow(
        /rmsnorm: tensor "g8" has shape \[8\] but \[4\] is required \(one value per row of "x"\)/,
      );
      expect(() => rmsnormBackward(ctx, x, g8, rstd, g8, x)).toThrow(
        /rmsnormBackward: tensor "g8" has shape \[8\] but \[4, 8\] is required/,
      );
      expect(() => rmsnormWeightGrad(ctx, x, rstd, y, g)).toThrow(
        /rmsnormWeightGrad: tensor "normWeight" has shape \[4\] but \[8\] is required/,
      );
      expect(() => rmsnormWeightGrad(ctx, x, rstd, y, g8, { rowEnd: 5 })).toThrow(
        /rmsnormWeightGrad: option "rowEnd" is 5; it must be an integer in \[0, 4\]/,
      );
    });
  });
});
