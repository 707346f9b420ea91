import { describe, expect, test } from 'vitest';
import { moeGroupedGemm } from '../../../../src/kernels/moe/grouped-gemm.ts';
import { float32Tolerance } from '../../../../src/reference/compare.ts';
import { moeGroupedGemmKernel, moeGroupedGemmWgradKernel } from '../../../../src/reference/moe/grouped-gemm.ts';
import { randomArray } from '../../../../src/reference/random.ts';
import { gpuCase, upload } from '../../gpu-case.ts';
import { gpuAndTwin } from './kernel-case.ts';
import { expectClose } from '../../gpu-case.ts';

// Tolerance: each output is a float32 dot product of K (forward, dgrad) or of an expert's rows
// (wgrad, at most N) terms with |a|, |b| ≤ 1: float32Tolerance(terms) against the float64 twin.

/** Offsets [E + 1] of uneven expert row counts (zeros included) summing to N. */
const offsetsOf = (counts: readonly number[]): Float32Array => {
  const o = [0];
  for (const c of counts) o.push(o[o.length - 1] + c);
  return Float32Array.from(o);
};

describe('moeGroupedGemm: every expert’s rows times its weight, one dispatch', () => {
  const cases: [number[], number, number][] = [
    // tokens per expert, K, Nc
    [[1], 1, 1],
    [[3, 0, 17, 5], 8, 12],
    [[0, 40, 1, 0, 16, 33, 2, 9], 33, 70],
    [[130, 0, 0, 64], 64, 130],
  ];
  for (const [counts, K, Nc] of cases)
    test(`rows per expert [${counts}], K = ${K}, Nc = ${Nc}: C, the transposed-B dgrad and the wgrad equal the twins`, async () => {
      const E = counts.length;
      const offsets = offsetsOf(counts);
      const N = offsets[E];
      await gpuCase(async (ctx) => {
        const a = randomArray(N * K, N + K);
        const b = randomArray(E * K * Nc, E + Nc);
        const [c] = await gpuAndTwin(
          ctx,
          moeGroupedGemmKernel,
          [
            { shape: [N, K], data: a },
            { shape: [E, K, Nc], data: b },
            { shape: [E + 1], data: offsets },
            { shape: [N, Nc], data: new Float32Array(N * Nc).fill(9) },
          ],
          { transB: false },
        );
        expectClose('C', c.gpu, c.twin, float32Tolerance(K));

        // dgrad: dA [N, K] = dC [N, Nc] · B_eᵀ with B [E, K, Nc] read as [E, Nc', K'] = its transpose
        const dC = randomArray(N * Nc, 5);
        const [dA] = await gpuAndTwin(
          ctx,
          moeGroupedGemmKernel,
          [
            { shape: [N, Nc], data: dC },
            { shape: [E, K, Nc], data: b },
            { shape: [E + 1], data: offsets },
            { shape: [N, K], data: new Float32Array(N * K).fill(9) },
          ],
          { transB: true },
        );
        expectClose('dA', dA.gpu, dA.twin, float32Tolerance(Nc));

        const [dB] = await gpuAndTwin(
          ctx,
          moeGroupedGemmWgradKernel,
          [
            { shape: [N, K], data: a },
            { shape: [N, Nc], data: dC },
            { shape: [E + 1], data: offsets },
            { shape: [E, K, Nc], data: new Float32Array(E * K * Nc).fill(9) },
          ],
          {},
        );
        expectClose('dB', dB.gpu, dB.twin, float32Tolerance(Math.max(...counts)));
      });
    });

  test('a weight whose shape does not match the offsets is refused, naming it', async () => {
    await gpuCase(async (ctx) => {
      const a = upload(ctx, 'xp', [4, 2], new Float32Array(8));
      const off = upload(ctx, 'offsets', [3], offsetsOf([1, 3]));
      const w = upload(ctx, 'fc1', [3, 2, 5], new Float32Array(30));
      const c = upload(ctx, 'h', [4, 5], new Float32Array(20));
      expect(() => moeGroupedGemm(ctx, a, w, off, c)).toThrow(
        /moeGroupedGemm: tensor "fc1" has shape \[3, 2, 5\] but \[2, 2, 5\] is required \(one weight per expert of "offsets"\)/,
      );
    });
  });
});
