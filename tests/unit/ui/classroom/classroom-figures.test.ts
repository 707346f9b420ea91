import { expect, test } from 'vitest';
import {
  classroomStepIds,
  type ClassroomMatrix,
  type ClassroomRankData,
  type ClassroomRuns,
} from '../../../../src/parallel/classroom.ts';
import { configFromPreset } from '../../../../src/parallel/config.ts';
import { stepFigures, type BlockFigure, type BlockSpec } from '../../../../src/ui/classroom/classroom-figures.ts';

const m = (rows: number, cols: number): ClassroomMatrix => ({
  shape: [rows, cols],
  data: new Float32Array(rows * cols),
});

/** Rank data with the classroom's shapes at degree t (values do not matter to the figures). */
function rankData(r: number, t: number, sp: boolean): ClassroomRankData {
  const s = 8,
    h = 16,
    f = 32 / t,
    sl = sp ? s / t : s;
  return {
    rank: r,
    tp: t,
    sp,
    x: m(sl, h),
    xFull: m(s, h),
    w1Gate: m(h, f),
    w1Up: m(h, f),
    yGate: m(s, f),
    yUp: m(s, f),
    act: m(s, f),
    w2: m(f, h),
    zPartial: m(s, h),
    z: m(sl, h),
    dz: m(sl, h),
    dzFull: m(s, h),
    dxPartial: m(s, h),
    dx: m(sl, h),
    attnPartial: m(s, h),
    attn: m(s, h),
    collectives: [],
  };
}

function runs(t: number): ClassroomRuns {
  const ranks = (sp: boolean) => [...Array(t).keys()].map((r) => rankData(r, t, sp));
  return {
    config: configFromPreset('classroom', { tp: t }),
    tp: ranks(false),
    sp: ranks(true),
    reference: rankData(0, 1, false),
  };
}

const blocksOf = (f: BlockFigure) =>
  f.rows.flatMap((r) => r.terms.filter((x): x is BlockSpec => typeof x !== 'string'));

test('at t = 4 the figures follow the shards: W₁ [h, f/t] per rank, GEMMs with local M, N, K, SP shards [s/t, h]', () => {
  const R = runs(4);
  const split = stepFigures('split-w1', R)[0] as BlockFigure;
  expect(split.rows.map((r) => r.rank)).toEqual([0, 1, 2, 3]);
  expect(blocksOf(split).map((b) => [b.rows, b.cols, b.rank])).toEqual(
    [0, 1, 2, 3].flatMap((r) => [
      [8, 16, r],
      [16, 8, r],
      [16, 8, r],
    ]),
  );
  expect((stepFigures('local-y', R)[0] as BlockFigure).rows.map((r) => r.gemm)).toEqual(
    Array(4).fill({ m: 8, n: 8, k: 16 }),
  );
  expect((stepFigures('partial-z', R)[0] as BlockFigure).rows[0].gemm).toEqual({ m: 8, n: 16, k: 8 });
  expect((stepFigures('backward', R)[0] as BlockFigure).rows[0].gemm).toEqual({ m: 8, n: 16, k: 16 });
  const sp = stepFigures('sequence-parallel', R);
  expect(blocksOf(sp[0] as BlockFigure).every((b) => b.rows === 2 && b.cols === 16)).toBe(true);
  expect(sp.slice(1).map((f) => f.kind === 'ring' && [f.op, f.payloadBytes, f.ringBytesPerRank])).toEqual([
    ['allGather', 512, 384],
    ['reduceScatter', 512, 384],
  ]);
});

test('every step of the walk-through has a figure; the collectives carry payload and ring bytes (all-reduce 2(t−1)/t·S)', () => {
  const R = runs(2);
  for (const id of classroomStepIds) expect(stepFigures(id, R).length, id).toBeGreaterThan(0);
  const ar = stepFigures('all-reduce', R)[0];
  expect(ar.kind === 'ring' && [ar.op, ar.t, ar.rows, ar.cols, ar.payloadBytes, ar.ringBytesPerRank]).toEqual([
    'allReduce',
    2,
    8,
    16,
    512,
    512,
  ]);
  const one = stepFigures('all-reduce', runs(1))[0];
  expect(one.kind === 'ring' && one.ringBytesPerRank).toBe(0);
  expect(stepFigures('straggler', runs(4))).toEqual([
    expect.objectContaining({ kind: 'run', config: runs(4).config, slow: { rank: 3, factor: 3 } }),
  ]);
  expect(stepFigures('straggler', runs(1))).toEqual([]); // t = 1: no collective, no one to wait for
  const heads = stepFigures('attention', R)[0];
  expect(heads.kind === 'heads' && heads.picture.heads.map((h) => h.rank)).toEqual([0, 0, 1, 1]);
});

test('attention at t = 4 > 2 KV groups adds the all-gather of the linear_qkv slices: [s, W] = 8×32, chunks along the columns', () => {
  const figs = stepFigures('attention', runs(4));
  expect(figs.map((f) => f.kind)).toEqual(['heads', 'ring', 'ring']);
  const ag = figs[1];
  // W = (4 + 2·2)·4 = 32 columns; all-gather: each rank sends (t−1)/t·S.
  expect(ag.kind === 'ring' && [ag.op, ag.rows, ag.cols, ag.along, ag.payloadBytes, ag.ringBytesPerRank]).toEqual([
    'allGather',
    8,
    32,
    'cols',
    8 * 32 * 4,
    (3 * 8 * 32 * 4) / 4,
  ]);
  const g = figs[2];
  expect(g.kind === 'ring' && [g.op, g.along]).toEqual(['allReduce', 'rows']);
  expect(stepFigures('attention', runs(2)).map((f) => f.kind)).toEqual(['heads', 'ring']);
});

test("the chunked-overlap step at t = 2, c = 2, written out by hand: each rank multiplies its own chunk first while sending it, and computes the other rank's partial of down first", () => {
  const [f, run] = stepFigures('tp-overlap', runs(2));
  expect(run).toEqual(
    expect.objectContaining({ kind: 'run', config: expect.objectContaining({ tp: 2, sp: true, tpOverlapChunks: 2 }) }),
  );
  if (f.kind !== 'chunks') throw new Error(`expected the chunk figure first, got ${f.kind}`);
  expect([f.t, f.chunks]).toEqual([2, 2]);
  // gate/up: multiply the own chunk while sending it and receiving the other's, then multiply that.
  expect(f.gather).toEqual([
    [{ multiply: [0], send: 0, recv: 1 }, { multiply: [1] }],
    [{ multiply: [1], send: 1, recv: 0 }, { multiply: [0] }],
  ]);
  // down: the other rank's partial first, sent on; the own block last, added to the partial received.
  expect(f.reduce).toEqual([
    [{ multiply: [1], send: 1, recv: 0 }, { multiply: [0] }],
    [{ multiply: [0], send: 0, recv: 1 }, { multiply: [1] }],
  ]);
  expect(stepFigures('tp-overlap', runs(1))).toEqual([]); // t = 1: nothing to overlap
});
