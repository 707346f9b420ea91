import { describe, expect, test } from 'vitest';
import { adamStep } from '../../../src/kernels/adam.ts';
import { adamHyper, adamRef } from '../../../src/reference/adam.ts';
import { randomArray } from '../../../src/reference/random.ts';
import { download, expectClose, gpuCase, upload } from '../gpu-case.ts';

const eps = 2 ** -23;

describe('adam', () => {
  for (const shape of [[1], [16], [16, 40], [3, 70001]]) {
    test(`three steps on shape [${shape}] match the CPU twin (p, m and v)`, async () => {
      await gpuCase(async (ctx) => {
        const n = shape.reduce((a, d) => a * d, 1);
        const h = adamHyper(0.01);
        const p0 = randomArray(n, 31 + n),
          grads = [1, 2, 3].map((k) => randomArray(n, 40 + k + n, 0.5));
        const pt = upload(ctx, 'p', shape, p0),
          mt = upload(ctx, 'm', shape, new Float32Array(n)),
          vt = upload(ctx, 'v', shape, new Float32Array(n));
        const p = Float64Array.from(p0),
          m = new Float64Array(n),
          v = new Float64Array(n);
        let ratio = 0; // max |m̂| / (√v̂ + ε) over the steps: the size of an update in units of lr
        for (let k = 1; k <= 3; k++) {
          adamStep(ctx, pt, upload(ctx, `g${k}`, shape, grads[k - 1]), mt, vt, h, k);
          adamRef(p, grads[k - 1], m, v, h, k);
          const c1 = 1 - 0.9 ** k,
            c2 = 1 - 0.999 ** k;
          for (let i = 0; i < n; i++) ratio = Math.max(ratio, Math.abs(m[i] / c1) / (Math.sqrt(v[i] / c2) + h.eps));
        }
        // Per step: p's subtraction rounds once (ε·|p| ≤ ε·1.1), the update carries ~10 roundings
        // (two fused moments, a divide by c1 and c2, sqrt, add, divide, multiply): ≤ 16ε·lr·ratio.
        // Moments: ≤ 4ε of their size per step (|g| ≤ 0.5 → |m| ≤ 0.5, v ≤ 0.25).
        expectClose('p', await download(ctx, pt), p, 3 * eps * (2 * 1.1 + 16 * h.lr * ratio));
        expectClose('m', await download(ctx, mt), m, 3 * 4 * eps * 0.5);
        expectClose('v', await download(ctx, vt), v, 3 * 4 * eps * 0.25);
        expect(ratio).toBeGreaterThan(0);
      });
    });
  }

  test('a gradient of another shape is refused before dispatch, naming the tensor', async () => {
    await gpuCase(async (ctx) => {
      const p = upload(ctx, 'wfc1', [4, 6], new Float32Array(24));
      const g = upload(ctx, 'd.wfc1', [6, 4], new Float32Array(24));
      expect(() => adamStep(ctx, p, g, p, p, adamHyper(0.1), 1)).toThrow(
        /adam: tensor "d.wfc1" has shape \[6, 4\] but \[4, 6\] is required/,
      );
    });
  });
});
