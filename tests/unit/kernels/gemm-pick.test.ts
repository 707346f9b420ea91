import { describe, expect, test } from 'vitest';
import { launchBound, pickGemmVariant, timeCandidates } from '../../../src/kernels/gemm-pick.ts';
import type { GemmVariant } from '../../../src/kernels/gemm-variants.ts';

// Cheapest to compile first, as the tuner tries them.
const byCost: GemmVariant[] = ['naive', 'rb4', 'quad8wide', 'quad8', 'quad16', 'tiled'];
const floor = 0.35;

describe('pickGemmVariant', () => {
  test('above the launch-bound regime the fastest wins, however close the cheaper ones are', () => {
    expect(pickGemmVariant({ rb4: 21, quad8: 6.2, quad16: 5, tiled: 9 }, byCost, floor)).toEqual({
      chosen: 'quad16',
      tied: ['quad16'],
    });
    expect(pickGemmVariant({ rb4: 21, quad8wide: 5.1, quad16: 5 }, byCost, floor)).toEqual({
      chosen: 'quad16',
      tied: ['quad16'],
    });
  });

  test('launch-bound variants (within two dispatch floors) tie with the fastest, and the cheapest compile wins', () => {
    // Classroom-sized GEMMs: every variant ≈ one dispatch, the order is noise.
    const ms = { naive: 0.55, rb4: 0.43, quad8wide: 0.37, quad8: 0.4, quad16: 0.36, tiled: 1.4 };
    expect(pickGemmVariant(ms, byCost, floor)).toEqual({
      chosen: 'naive',
      tied: ['naive', 'rb4', 'quad8wide', 'quad8', 'quad16'],
    });
  });

  test('only timed variants count, and none timed gives no pick', () => {
    expect(pickGemmVariant({ quad16: 1 }, byCost, floor)?.chosen).toBe('quad16');
    expect(pickGemmVariant({}, byCost, floor)).toBeUndefined();
  });
});

describe('launchBound', () => {
  test('two dispatch floors is the line', () => {
    expect(launchBound(0.7, floor)).toBe(true);
    expect(launchBound(0.71, floor)).toBe(false);
  });

  test('a launch-bound variant is chosen whatever a costlier one measures, as long as nothing beats the floor', () => {
    for (const other of [0.35, 0.5, 3])
      expect(pickGemmVariant({ naive: 0.7, quad16: other }, byCost, floor)?.chosen).toBe('naive');
  });
});

describe('timeCandidates', () => {
  /** A timing function over fixed figures that records what it was asked to time. */
  const timer = (ms: Partial<Record<GemmVariant, number>>) => {
    const asked: GemmVariant[] = [];
    return { asked, time: async (v: GemmVariant) => (asked.push(v), ms[v]) };
  };

  test('a launch-bound first variant ends the search: nothing costlier is compiled or timed', async () => {
    const t = timer({ naive: 0.4, rb4: 0.38, quad16: 0.36 });
    expect(await timeCandidates(byCost, t.time, floor)).toEqual({ msPerRun: { naive: 0.4 }, launchBound: true });
    expect(t.asked).toEqual(['naive']);
  });

  test('skipped variants do not count as first: the first one timed decides', async () => {
    const t = timer({ rb4: 0.5, quad16: 0.36 }); // naive skipped (say, a large proxy)
    expect(await timeCandidates(byCost, t.time, floor)).toEqual({ msPerRun: { rb4: 0.5 }, launchBound: true });
    expect(t.asked).toEqual(['naive', 'rb4']);
  });

  test('a first variant above two floors times every other; a later launch-bound one does not stop it', async () => {
    const ms = { naive: 0.9, rb4: 0.5, quad8wide: 0.45, quad8: 0.44, quad16: 0.4, tiled: 1.5 };
    const t = timer(ms);
    expect(await timeCandidates(byCost, t.time, floor)).toEqual({ msPerRun: ms, launchBound: false });
    expect(t.asked).toEqual(byCost);
    // …and the pick then sends the launch-bound tie to the cheapest of them.
    expect(pickGemmVariant(ms, byCost, floor)?.chosen).toBe('rb4');
  });
});
