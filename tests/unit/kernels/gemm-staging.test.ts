import { describe, expect, test } from 'vitest';
import { gemmStaging, stagingBytes, stagingRefusal } from '../../../src/kernels/gemm-staging.ts';
import { denseProblem, type GemmProblem } from '../../../src/reference/gemm.ts';

// WebGPU's default limits (the spec's "default" column): what an adapter offers at least.
const limits = { maxTextureDimension2D: 8192, maxTextureArrayLayers: 256 };

describe('GEMM operand staging geometry', () => {
  test('A is Kp/4 texels wide and M tall, B ⌈N/4⌉ wide and Kp tall; K rounds up to the 8-wide k-step', () => {
    expect(gemmStaging(denseProblem(1024, 1024, 1024))).toEqual({ Kp: 1024, a: [256, 1024, 1], b: [256, 1024, 1] });
    // K = 21 → Kp = 24 (6 texels of A per row, 24 rows of B); N = 70 → 18 texels (the last holds 2 columns).
    expect(gemmStaging(denseProblem(37, 70, 21))).toEqual({ Kp: 24, a: [6, 37, 1], b: [18, 24, 1] });
    // K = 0: one zero texel per row of A, one row of B, so both textures exist; the k loop never runs.
    expect(gemmStaging(denseProblem(3, 5, 0))).toEqual({ Kp: 0, a: [1, 3, 1], b: [2, 1, 1] });
  });

  test('batches are layers; batches sharing one B (GQA, divB) share its layer', () => {
    const p: GemmProblem = { ...denseProblem(9, 9, 5), batch: 6, divB: 3, bsA: 5, bsB: 5, bsC: 81 };
    expect(gemmStaging(p)).toEqual({ Kp: 8, a: [2, 9, 6], b: [3, 8, 2] });
    // 16 bytes per texel: A 2·9·6 + B 3·8·2 = 156 texels.
    expect(stagingBytes(gemmStaging(p))).toBe(16 * 156);
  });

  // The largest that fits: M ≤ 8192 rows of A, K ≤ 8192 rows of B, N ≤ 4·8192 columns.
  test('a problem within the texture limits fits; one past them is refused naming the operand, the extent and the limit', () => {
    expect(stagingRefusal(gemmStaging(denseProblem(8192, 32768, 8192)), limits)).toBeUndefined();
    expect(stagingRefusal(gemmStaging(denseProblem(8193, 4, 4)), limits)).toBe(
      'staged A would be 2 × 8193 texels, beyond maxTextureDimension2D 8192',
    );
    // K = 8200 makes B 8200 rows tall while A stays 2050 texels wide.
    expect(stagingRefusal(gemmStaging(denseProblem(4, 4, 8200)), limits)).toBe(
      'staged B would be 1 × 8200 texels, beyond maxTextureDimension2D 8192',
    );
    const heads: GemmProblem = { ...denseProblem(4, 4, 4), batch: 257, bsA: 16, bsB: 16, bsC: 16 };
    expect(stagingRefusal(gemmStaging(heads), limits)).toBe(
      'staged A would have 257 layers, beyond maxTextureArrayLayers 256',
    );
  });
});
