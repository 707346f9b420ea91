import { describe, expect, test } from 'vitest';
import { gemmVariants, pipelineConstants } from '../../../src/kernels/gemm-variants.ts';
import { denseProblem } from '../../../src/reference/gemm.ts';

describe('GEMM pipeline constants', () => {
  const staged = gemmVariants.staged32; // tile 64 × 128

  test('a problem the tiles cover exactly runs without store guards; accumulate follows the problem', () => {
    expect(pipelineConstants(staged, denseProblem(256, 256, 7))).toEqual({
      QX: 4,
      QUADS: 8,
      ACCUMULATE: 0,
      EDGE: 0,
    });
    expect(pipelineConstants(staged, denseProblem(64, 128, 3, { accumulate: true }))).toMatchObject({
      ACCUMULATE: 1,
      EDGE: 0,
    });
  });

  test('a problem with a partial tile in M or in N keeps the guards', () => {
    expect(pipelineConstants(staged, denseProblem(96, 256, 8))).toMatchObject({ EDGE: 1 });
    expect(pipelineConstants(staged, denseProblem(64, 200, 8))).toMatchObject({ EDGE: 1 });
  });

  test('variants without a specialised epilogue keep their own constants (accumulate is a runtime flag there)', () => {
    for (const v of Object.values(gemmVariants).filter((s) => !s.specialisedEpilogue)) {
      expect(pipelineConstants(v, denseProblem(64, 64, 8, { accumulate: true }))).toBe(v.constants);
    }
    expect(
      Object.values(gemmVariants)
        .filter((s) => s.specialisedEpilogue)
        .map((s) => s.name),
    ).toEqual(['quad8', 'quad8wide', 'quad16', 'staged32']);
  });
});
