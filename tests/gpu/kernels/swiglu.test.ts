import { describe, expect, test } from 'vitest';
import { swiglu, swigluBackward } from '../../../src/kernels/swiglu.ts';
import { randomArray } from '../../../src/reference/random.ts';
import { swigluBackwardRef, swigluRef } from '../../../src/reference/swiglu.ts';
import { download, expectClose, gpuCase, upload } from '../gpu-case.ts';

const eps = 2 ** -23;

// Tolerances (no accumulation; a handful of roundings per element). σ uses one exp, accurate to
// (3 + 2|g|) ulp in WGSL, and a divide (2.5 ulp): relative error of σ ≤ ε·(6 + 2|g|). y and du add
// two multiplies, dg five more operations with terms up to |g|: |Δ| ≤ ε·(10 + 4|g|)·|g|max·|u|max·|dy|max
// bounds both (|1 + g(1 − σ)| ≤ 1 + |g|).
const tolFor = (gMax: number, uMax: number): number => eps * (10 + 4 * gMax) * (1 + gMax) * uMax;

describe('swiglu', () => {
  for (const shape of [[1], [5, 13], [1000, 3], [2, 1500], [2, 3, 67]]) {
    test(`y, dg and du match the CPU twin for shape [${shape}]`, async () => {
      await gpuCase(async (ctx) => {
        const n = shape.reduce((a, d) => a * d, 1);
        const g = randomArray(n, 21 + n, 6),
          u = randomArray(n, 22 + n, 2),
          dy = randomArray(n, 23 + n);
        const gt = upload(ctx, 'gate', shape, g),
          ut = upload(ctx, 'up', shape, u);
        const yt = upload(ctx, 'y', shape, new Float32Array(n));
        swiglu(ctx, gt, ut, yt);
        expectClose('y', await download(ctx, yt), swigluRef(g, u), tolFor(6, 2));

        const dgt = upload(ctx, 'dg', shape, new Float32Array(n)),
          dut = upload(ctx, 'du', shape, new Float32Array(n));
        swigluBackward(ctx, gt, ut, upload(ctx, 'dy', shape, dy), dgt, dut);
        const want = swigluBackwardRef(g, u, dy);
        expectClose('dg', await download(ctx, dgt), want.dg, tolFor(6, 2));
        expectClose('du', await download(ctx, dut), want.du, tolFor(6, 2));
      });
    });
  }

  test('gates of ±1e4 stay finite: silu saturates to g or 0', async () => {
    await gpuCase(async (ctx) => {
      const g = Float32Array.from([1e4, -1e4, 90, -90]),
        one = new Float32Array(4).fill(1);
      const gt = upload(ctx, 'gate', [4], g),
        ut = upload(ctx, 'up', [4], one);
      const yt = upload(ctx, 'y', [4], new Float32Array(4));
      const dgt = upload(ctx, 'dg', [4], new Float32Array(4)),
        dut = upload(ctx, 'du', [4], new Float32Array(4));
      swiglu(ctx, gt, ut, yt);
      swigluBackward(ctx, gt, ut, upload(ctx, 'dy', [4], one), dgt, dut);
      expectClose('y', await download(ctx, yt), [1e4, 0, 90, 0], 1e-3);
      expectClose('dg', await download(ctx, dgt), [1, 0, 1, 0], 1e-6);
    });
  });

  test('mismatched shapes are refused before dispatch, naming the tensor', async () => {
    await gpuCase(async (ctx) => {
      const g = upload(ctx, 'gate', [4, 6], new Float32Array(24));
      const u = upload(ctx, 'up', [6, 4], new Float32Array(24));
      expect(() => swiglu(ctx, g, u, g)).toThrow(/swiglu: tensor "up" has shape \[6, 4\] but \[4, 6\] is required/);
      expect(() => swigluBackward(ctx, g, g, g, g, u)).toThrow(
        /swigluBackward: tensor "up" has shape \[6, 4\] but \[4, 6\] is required/,
      );
    });
  });
});
