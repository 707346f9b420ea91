import { describe, expect, test } from 'vitest';
import {
  gemmStaging,
  stagedCopyOffset,
  stagedRows,
  stagingBytes,
  stagingRefusal,
} from '../../../src/reference/gemm-staging.ts';
import { denseProblem, type GemmProblem } from '../../../src/reference/gemm.ts';

// WebGPU's default maxTextureDimension2D (the spec's "default" column): what an adapter offers at least.
const limits = { maxTextureDimension2D: 8192 };

describe('GEMM operand staging geometry', () => {
  test('A is M rows of Kp/4 texels, B Kp rows of ⌈N/4⌉ texels; K rounds up to the 8-wide k-step', () => {
    expect(gemmStaging(denseProblem(1024, 1024, 1024))).toEqual({ Kp: 1024, a: 1024 * 256, b: 1024 * 256 });
    // K = 21 → Kp = 24 (6 texels of A per row, 24 rows of B); N = 70 → 18 texels a row (the last holds 2 columns).
    expect(gemmStaging(denseProblem(37, 70, 21))).toEqual({ Kp: 24, a: 37 * 6, b: 24 * 18 });
    // K = 0 stages nothing, but each texture still has one row.
    expect(gemmStaging(denseProblem(3, 5, 0))).toEqual({ Kp: 0, a: 0, b: 0 });
    expect(stagedRows(0)).toBe(1);
  });

  test('every batch has its A; batches sharing one B (GQA, divB) share its copy', () => {
    const p: GemmProblem = { ...denseProblem(9, 9, 5), batch: 6, divB: 3, bsA: 5, bsB: 5, bsC: 81 };
    // Kp = 8: A 6 batches × 9 rows × 2 texels; B 2 distinct × 8 rows × 3 texels.
    expect(gemmStaging(p)).toEqual({ Kp: 8, a: 108, b: 48 });
    // Whole rows of 2048 texels, 16 bytes each: one row per operand here.
    expect(stagingBytes(gemmStaging(p))).toBe(2 * 16 * 2048);
  });

  test('padding that would more than double an operand is refused: K < 4 or N < 4 run the fallback', () => {
    const refusal = (M: number, N: number, K: number) =>
      stagingRefusal(denseProblem(M, N, K), gemmStaging(denseProblem(M, N, K)), limits);
    expect(refusal(37, 72, 4)).toBeUndefined(); // K = 4 → Kp = 8: exactly 2× (N = 72 needs no padding)
    expect(refusal(37, 70, 3)).toBe(
      'staged A would hold 296 floats for its 111 (K = 3 padded to 8, N = 70 to 72), more than 2×',
    );
    expect(refusal(37, 2, 64)).toBeUndefined(); // N = 2 → 4 columns: exactly 2×
    expect(refusal(37, 1, 64)).toBe(
      'staged B would hold 256 floats for its 64 (K = 64 padded to 64, N = 1 to 4), more than 2×',
    );
  });

  test('an operand within maxTextureDimension2D rows of 2048 texels fits; one past is refused naming it, its rows and the limit', () => {
    // 8192 rows × 2048 texels = 2^24 texels = 2^26 floats (256 MiB) per operand.
    expect(
      stagingRefusal(denseProblem(4096, 4096, 16384), gemmStaging(denseProblem(4096, 4096, 16384)), limits),
    ).toBeUndefined();
    expect(stagingRefusal(denseProblem(4097, 4, 16384), gemmStaging(denseProblem(4097, 4, 16384)), limits)).toBe(
      'staged A would need 8194 rows of 2048 texels, beyond maxTextureDimension2D 8192',
    );
    expect(stagingRefusal(denseProblem(4, 4100, 16384), gemmStaging(denseProblem(4, 4100, 16384)), limits)).toBe(
      'staged B would need 8200 rows of 2048 texels, beyond maxTextureDimension2D 8192',
    );
  });

  test('a row-major, dense, 16-byte-aligned operand with K a multiple of 8 is staged by copy; anything else by the pack pass', () => {
    const p = denseProblem(70, 64, 128);
    expect([stagedCopyOffset(p, 'A'), stagedCopyOffset(p, 'B')]).toEqual([0, 0]);
    // Transposed operands, K off the k-step, N off a texel, misaligned offsets: packed.
    const tA = denseProblem(70, 64, 128, { transA: true, transB: true });
    expect([stagedCopyOffset(tA, 'A'), stagedCopyOffset(tA, 'B')]).toEqual([undefined, undefined]);
    expect(stagedCopyOffset(denseProblem(70, 64, 12), 'A')).toBeUndefined();
    expect(stagedCopyOffset(denseProblem(70, 66, 128), 'B')).toBeUndefined();
    expect(stagedCopyOffset({ ...p, offA: 6 }, 'A')).toBeUndefined();
    expect(stagedCopyOffset({ ...p, offA: 8 }, 'A')).toBe(8);
    // Batches: A dense across them (bsA = M·K) copies; heads strided inside a row ([s, heads, d]) do not.
    const batched: GemmProblem = { ...p, batch: 3, bsA: 70 * 128, bsB: 128 * 64, bsC: 70 * 64 };
    expect([stagedCopyOffset(batched, 'A'), stagedCopyOffset(batched, 'B')]).toEqual([0, 0]);
    expect(stagedCopyOffset({ ...batched, sAm: 3 * 128, bsA: 128 }, 'A')).toBeUndefined();
    // One B shared by every batch (divB = batch) is dense whatever bsB says.
    expect(stagedCopyOffset({ ...batched, divB: 3, bsB: 0 }, 'B')).toBe(0);
  });
});
