import { describe, expect, test } from 'vitest';
import { closestRace, launchBound, pickGemmVariant, spread, timeCandidates } from '../../../src/kernels/gemm-pick.ts';
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
    expect(await timeCandidates(byCost, t.time, floor)).toMatchObject({
      msPerRun: { naive: 0.4 },
      launchBound: true,
      repeats: 0,
    });
    expect(t.asked).toEqual(['naive']);
  });

  test('skipped variants do not count as first: the first one timed decides', async () => {
    const t = timer({ rb4: 0.5, quad16: 0.36 }); // naive skipped (say, a large proxy)
    expect(await timeCandidates(byCost, t.time, floor)).toMatchObject({ msPerRun: { rb4: 0.5 }, launchBound: true });
    expect(t.asked).toEqual(['naive', 'rb4']);
  });

  test('a first variant above two floors times every other; a later launch-bound one does not stop it', async () => {
    const ms = { naive: 0.9, rb4: 0.5, quad8wide: 0.45, quad8: 0.44, quad16: 0.4, tiled: 1.5 };
    const t = timer(ms);
    expect(await timeCandidates(byCost, t.time, floor)).toMatchObject({ msPerRun: ms, launchBound: false });
    // One trial each, then a second round over those within twice the best (quad16's 0.4): not naive, not tiled.
    expect(t.asked).toEqual([...byCost, ...byCost.slice(1, -1)]);
    // …and the pick then sends the launch-bound tie to the cheapest of them.
    expect(pickGemmVariant(ms, byCost, floor)?.chosen).toBe('rb4');
  });
});

describe('close races are timed again', () => {
  /** A timing function that returns each variant's figures in turn (the last one repeated). */
  const sequence = (figures: Partial<Record<GemmVariant, number[]>>) => {
    const asked: GemmVariant[] = [];
    const seen: Partial<Record<GemmVariant, number>> = {};
    const time = async (v: GemmVariant): Promise<number | undefined> => {
      asked.push(v);
      const xs = figures[v];
      if (!xs) return undefined;
      const i = (seen[v] = (seen[v] ?? -1) + 1);
      return xs[Math.min(i, xs.length - 1)];
    };
    return { asked, time };
  };

  test('spread is how far the second-best trial is from the best, and 0 for a single trial', () => {
    expect(spread([12.5, 10, 11])).toBeCloseTo(0.1);
    expect(spread([10, 30, 10.2])).toBeCloseTo(0.02); // one slow outlier is not noise
    expect(spread([3])).toBe(0);
  });

  test('the best two apart by more than their spread are not re-timed', async () => {
    // quad16 at 100 ± 1%, quad8 at 110 ± 1%: a 10% gap against 2% noise.
    const t = sequence({ rb4: [300, 300], quad8: [110, 111], quad16: [100, 101] });
    const r = await timeCandidates(['rb4', 'quad8', 'quad16'], t.time, floor);
    expect(r).toMatchObject({ repeats: 0, msPerRun: { quad16: 100, quad8: 110 } });
    expect(closestRace(r.samples, 0.02)).toMatchObject({ first: 'quad16', second: 'quad8', apart: true });
  });

  test('two within the noise are timed again, one trial each per round, until apart or out of rounds', async () => {
    // quad8 and quad16 first look 3% apart with 5% spread; one more trial each separates them
    // (quad8's two best are then 90 and 90, 11% below quad16's 100 and 100).
    const t = sequence({ quad8: [103, 108, 90, 90], quad16: [100, 105, 100, 100] });
    // Round 1 gives quad8 90 (two best 90, 103: spread 14%, gap 11%); round 2 gives 90 again.
    const r = await timeCandidates(['quad8', 'quad16'], t.time, floor);
    expect(r.repeats).toBe(2);
    expect(r.msPerRun).toEqual({ quad8: 90, quad16: 100 });
    expect(pickGemmVariant(r.msPerRun, byCost, floor)?.chosen).toBe('quad8');
    // Never separable: at most maxRepeats rounds.
    const tie = sequence({ quad8: [100, 103], quad16: [101, 102] });
    const r2 = await timeCandidates(['quad8', 'quad16'], tie.time, floor, {
      trials: 2,
      maxRepeats: 3,
      minNoise: 0.02,
      dropAbove: 2,
    });
    expect(r2.repeats).toBe(3);
    expect(r2.samples.quad8).toHaveLength(5);
    expect(tie.asked.filter((v) => v === 'quad16')).toHaveLength(5);
  });
});
