import { describe, expect, test } from 'vitest';
import { launchBound, pickGemmVariant, tieFraction } from '../../../src/kernels/gemm-pick.ts';
import type { GemmVariant } from '../../../src/kernels/gemm-variants.ts';

// Cheapest to compile first, as verification measures it on SwiftShader.
const byCost: GemmVariant[] = ['naive', 'rb4', 'quad8wide', 'quad8', 'quad16', 'tiled'];

describe('pickGemmVariant', () => {
  test('a clear winner is chosen whatever it costs to compile', () => {
    const ms = { rb4: 21, quad8: 6.2, quad16: 5, tiled: 9 };
    expect(pickGemmVariant(ms, byCost, 0.35)).toEqual({ chosen: 'quad16', tied: ['quad16'] });
  });

  test(`within ${tieFraction * 100}% of the fastest, the cheaper compile wins`, () => {
    const ms = { rb4: 21, quad8: 5.4, quad16: 5, tiled: 9 };
    expect(pickGemmVariant(ms, byCost, 0.35)).toEqual({ chosen: 'quad8', tied: ['quad8', 'quad16'] });
  });

  test('a launch-bound proxy (differences below one dispatch) goes to the cheapest compile', () => {
    // Classroom-sized GEMMs: every variant ≈ one dispatch, the order is noise.
    const ms = { naive: 0.55, rb4: 0.43, quad8wide: 0.37, quad8: 0.4, quad16: 0.36, tiled: 1.4 };
    expect(pickGemmVariant(ms, byCost, 0.35)).toEqual({ chosen: 'naive', tied: ['naive', 'rb4', 'quad8wide', 'quad8', 'quad16'] });
  });

  test('only timed variants count, and none timed gives no pick', () => {
    expect(pickGemmVariant({ quad16: 1 }, byCost, 0.35)?.chosen).toBe('quad16');
    expect(pickGemmVariant({}, byCost, 0.35)).toBeUndefined();
  });
});

describe('launchBound', () => {
  test('within two dispatch floors a variant ties with any faster one, so it may stop the search', () => {
    expect(launchBound(0.7, 0.35)).toBe(true);
    expect(launchBound(0.71, 0.35)).toBe(false);
    // The claim behind it: nothing runs faster than one floor, and a tie window then reaches two floors.
    for (const other of [0.35, 0.5, 3]) expect(pickGemmVariant({ naive: 0.7, quad16: other }, byCost, 0.35)?.chosen).toBe('naive');
    // Only a time below the floor (the premise broken) could beat it.
    expect(pickGemmVariant({ naive: 0.7, quad16: 0.3 }, byCost, 0.35)?.chosen).toBe('quad16');
  });
});
