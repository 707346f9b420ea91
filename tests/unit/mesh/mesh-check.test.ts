import { describe, expect, test } from 'vitest';
import { checkMeshLayout, isMesh, type MeshLayout } from '../../../src/mesh/mesh-check.ts';

// The e2e layout: t 2 × p 2 × d 2, m 4, 1F1B, the classroom preset's b = 1 and vocab 32, L 12.
const ok: MeshLayout = {
  tp: 2,
  pp: 2,
  vpp: 1,
  dp: 2,
  m: 4,
  schedule: '1f1b',
  layers: 12,
  b: 1,
  gbatch: 'auto',
  vocab: 32,
};
const fields = (l: Partial<MeshLayout>) => checkMeshLayout({ ...ok, ...l }).map((i) => i.field);
const messages = (l: Partial<MeshLayout>) => checkMeshLayout({ ...ok, ...l }).map((i) => i.message);

describe('the rules of a mesh run', () => {
  test('a legal layout has no issue; p = d = 1 is no mesh', () => {
    expect(checkMeshLayout(ok)).toEqual([]);
    expect(checkMeshLayout({ ...ok, pp: 4, vpp: 3, schedule: 'interleaved', m: 8, dp: 1 })).toEqual([]);
    expect(isMesh({ pp: 1, dp: 1 })).toBe(false);
    expect(isMesh({ pp: 1, dp: 2 })).toBe(true);
  });

  test('more than 16 rank workers: at d when d > 1, else at p, with the legal values of each', () => {
    expect(fields({ dp: 8 })).toEqual(['dp']);
    expect(messages({ dp: 8 })[0]).toMatch(
      /^t × p × d = 2 × 2 × 8 = 32 rank workers, more than the 16 .*legal p at t = 2, d = 8: 1; legal d at t = 2, p = 2: 1, 2, 3, 4\.$/,
    );
    expect(fields({ dp: 1, pp: 12, layers: 12 })).toEqual(['pp']);
    expect(fields({ dp: 2, pp: 4, tp: 2 })).toEqual([]); // exactly 16
  });

  test("L that Megatron's split refuses, with the legal p and L", () => {
    expect(fields({ layers: 9 })).toEqual(['layers']);
    expect(messages({ layers: 9 })[0]).toMatch(
      /L = 9 layers do not split over p = 2 stages × v = 1 chunks .* Legal p at this L and v: 1, 3, 9; legal L up to 64 at this p and v: 2, 4, 6,/,
    );
    // v divides each stage's layers too: L 12, p 4, v 2 leaves 3 per stage.
    expect(fields({ pp: 4, vpp: 2, dp: 1, schedule: 'interleaved', m: 8 })).toEqual(['layers']);
  });

  test("the interleaved schedule's rule on m and on v, and v > 1 outside it", () => {
    expect(fields({ schedule: 'interleaved', vpp: 2, m: 3 })).toEqual(['m']);
    expect(messages({ schedule: 'interleaved', vpp: 2, m: 3 })[0]).toMatch(/Legal m: 2, 4, 6, 8/);
    expect(fields({ schedule: 'interleaved', vpp: 1 })).toEqual(['vpp']);
    expect(fields({ schedule: 'zb-h1', vpp: 2 })).toEqual(['schedule']);
  });

  test('a global batch G that b·d·m does not make: the m it means, or the multiple to write', () => {
    expect(fields({ gbatch: 8 })).toEqual([]);
    expect(messages({ gbatch: 16 })).toEqual([
      expect.stringMatching(/that is m = 8, not 4: write m=8, or gbatch=8, or gbatch=auto\.$/),
    ]);
    expect(messages({ gbatch: 7 })).toEqual([
      expect.stringMatching(/must be a multiple of b·d = 1·2 = 2 .* write gbatch=8, or gbatch=auto\.$/),
    ]);
  });

  test('no vocabulary: the first stage has nothing to embed', () => {
    expect(fields({ vocab: 0 })).toEqual(['vocab']);
  });
});
