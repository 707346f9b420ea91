import { describe, expect, test } from 'vitest';
import { attentionPicture } from '../../../src/parallel/attention-picture.ts';
import {
  checkAgainst,
  classroomDegree,
  classroomStepIds,
  classroomSteps,
  concatRows,
  sumMatrices,
  type ClassroomMatrix,
  type ClassroomRankData,
} from '../../../src/parallel/classroom.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';

const m = (rows: number, cols: number, f: (i: number) => number): ClassroomMatrix => ({
  shape: [rows, cols],
  data: Float32Array.from({ length: rows * cols }, (_, i) => f(i)),
});

/** Hand-made rank data: only shapes and the Z / dX values matter to the steps' checks. */
function rank(r: number, tp: number, sp: boolean, z: ClassroomMatrix, dx: ClassroomMatrix): ClassroomRankData {
  const c = configFromPreset('classroom');
  const sh = m(c.s, c.h, () => 0);
  const sf = m(c.s, c.ffn / tp, () => 0);
  return {
    rank: r,
    tp,
    sp,
    x: sh,
    xFull: sh,
    w1Gate: m(c.h, c.ffn / tp, () => 0),
    w1Up: m(c.h, c.ffn / tp, () => 0),
    yGate: sf,
    yUp: sf,
    act: sf,
    w2: m(c.ffn / tp, c.h, () => 0),
    zPartial: sh,
    z,
    dz: sh,
    dzFull: sh,
    dxPartial: sh,
    dx,
    attnPartial: sh,
    attn: sh,
    collectives: [],
  };
}

describe('classroom steps', () => {
  test('partial sums add element-wise, SP shards concatenate in rank order', () => {
    expect([...sumMatrices([m(1, 3, (i) => i), m(1, 3, () => 1)]).data]).toEqual([1, 2, 3]);
    const cat = concatRows([m(1, 2, () => 1), m(2, 2, () => 2)]);
    expect(cat.shape).toEqual([3, 2]);
    expect([...cat.data]).toEqual([1, 1, 2, 2, 2, 2]);
  });

  test('a check passes within the oracle tolerance and fails on an O(1) error', () => {
    const c = configFromPreset('classroom', { tp: 2 });
    const ref = m(2, 2, (i) => i - 1.5);
    // 16·2⁻²³·(32 + 1)·1.5 ≈ 9.4e-5
    expect(
      checkAgainst(
        c,
        'ok',
        m(2, 2, (i) => i - 1.5 + 1e-5),
        ref,
      ).pass,
    ).toBe(true);
    expect(
      checkAgainst(
        c,
        'bad',
        m(2, 2, (i) => (i === 3 ? 0 : i - 1.5)),
        ref,
      ).pass,
    ).toBe(false);
  });

  test('ten steps at t = 2 name their collectives with payload and ring bytes; step 5 fails when the sum is wrong', () => {
    const c = configFromPreset('classroom', { tp: 2 });
    const z = m(8, 16, (i) => Math.sin(i)),
      dx = m(8, 16, (i) => Math.cos(i));
    const half = (a: ClassroomMatrix, r: number) => ({ shape: [4, 16], data: a.data.slice(r * 64, (r + 1) * 64) });
    const runs = {
      config: c,
      tp: [0, 1].map((r) => rank(r, 2, false, z, dx)),
      sp: [0, 1].map((r) => rank(r, 2, true, half(z, r), half(dx, r))),
      reference: rank(0, 1, false, z, dx),
    };
    const steps = classroomSteps(runs);
    expect(steps.map((s) => s.id)).toEqual(classroomStepIds);
    const s5 = steps[4];
    expect(s5.collectives).toEqual([
      expect.objectContaining({
        op: 'allReduce',
        payloadBytes: 8 * 16 * 4,
        ringBytesPerRank: 512,
        megatron: 'reduce_from_tensor_model_parallel_region',
      }),
    ]);
    expect(s5.checks.every((k) => k.pass)).toBe(true);
    expect(steps[5].collectives.map((k) => [k.op, k.megatron])).toEqual([
      ['identity', 'reduce_from_tensor_model_parallel_region (backward)'],
      ['allReduce', 'copy_to_tensor_model_parallel_region (backward)'],
    ]);
    expect(steps[6].collectives.map((k) => [k.op, k.ringBytesPerRank])).toEqual([
      ['allGather', 256],
      ['reduceScatter', 256],
      ['allGather', 256],
      ['reduceScatter', 256],
    ]);
    expect(steps[6].checks.every((k) => k.pass)).toBe(true);
    const wrong = classroomSteps({
      ...runs,
      reference: rank(
        0,
        1,
        false,
        m(8, 16, () => 0),
        dx,
      ),
    });
    expect(wrong[4].checks[0].pass).toBe(false);
    expect(steps[2].collectives).toEqual([]); // SwiGLU: nothing to communicate
    expect(steps[8].collectives.map((k) => [k.op, k.payloadBytes, k.ringBytesPerRank])).toEqual([
      ['allGather', 512, 256],
      ['reduceScatter', 512, 256],
    ]); // chunked overlap at t = 2, c = 2: one chunk per rank, so one all-gather / reduce-scatter of the whole [s, h]
    expect(steps[9].collectives.map((k) => [k.op, k.megatron])).toEqual([
      ['allReduce', 'reduce_from_tensor_model_parallel_region'],
    ]); // the straggler step: the all-reduce every rank waits in
  });

  test('attention picture: with 2 KV groups at t = 4 the ranks compute even linear_qkv slices, gather them, and rank r reads group ⌊r/2⌋', () => {
    const p = attentionPicture(configFromPreset('classroom', { tp: 4 }));
    expect(p.heads.map((h) => [h.rank, h.group])).toEqual([
      [0, 0],
      [1, 0],
      [2, 1],
      [3, 1],
    ]);
    expect(p.groups).toEqual([
      { group: 0, ranks: [0, 1] },
      { group: 1, ranks: [2, 3] },
    ]);
    expect(p.gathered).toBe(true);
    expect(p.blocks).toEqual([0, 0, 1, 1]);
    // W = (4 + 2·2)·4 = 32 columns, 8 per rank: [q0 q1 | k0 v0 | q2 q3 | k1 v1].
    expect(p.slices.map((r) => r.pieces.map((x) => (x.kind === 'q' ? `q${x.head}` : `${x.kind}${x.group}`)))).toEqual([
      ['q0', 'q1'],
      ['k0', 'v0'],
      ['q2', 'q3'],
      ['k1', 'v1'],
    ]);
    const two = attentionPicture(configFromPreset('classroom', { tp: 2 }));
    expect(two.gathered).toBe(false);
    expect(two.blocks).toBeUndefined();
    expect(two.slices[1].pieces.map((x) => (x.kind === 'q' ? `q${x.head}` : `${x.kind}${x.group}`))).toEqual([
      'q2',
      'q3',
      'k1',
      'v1',
    ]);
  });

  test('attention picture at llama-gqa t = 8: a slice of 48 columns cuts q1 in half (rank 0: q0, 16 of q1’s 32)', () => {
    const p = attentionPicture(configFromPreset('llama-gqa', { tp: 8 }));
    expect(p.slices[0].pieces.map((x) => [x.kind, x.head, x.cols, x.of])).toEqual([
      ['q', 0, 32, 32],
      ['q', 1, 16, 32],
    ]);
  });

  test('the classroom preset (4 heads, 2 KV groups, s 8) takes t = 1, 2, 4; other requests fall to the legal degree below', () => {
    expect([1, 2, 3, 4, 8, 16].map(classroomDegree)).toEqual([1, 2, 2, 4, 4, 4]);
  });
});

test("step 6's g-backward check compares each rank's dZ with TP=1's, so a wrong dZ on one rank fails it", () => {
  const c = configFromPreset('classroom', { tp: 2 });
  const z = m(8, 16, (i) => Math.sin(i)),
    dx = m(8, 16, (i) => Math.cos(i)),
    dz = m(8, 16, (i) => Math.tan(i / 200));
  const withDz = (d: ClassroomRankData, dzFull: ClassroomMatrix): ClassroomRankData => ({ ...d, dz, dzFull });
  const runs = (rank1: ClassroomMatrix) => ({
    config: c,
    tp: [withDz(rank(0, 2, false, z, dx), dz), withDz(rank(1, 2, false, z, dx), rank1)],
    reference: withDz(rank(0, 1, false, z, dx), dz),
  });
  const passes = (r1: ClassroomMatrix) => classroomSteps(runs(r1))[5].checks.map((k) => k.pass);
  expect(passes(dz)).toEqual([true, true, true]);
  expect(passes(m(8, 16, (i) => (i === 5 ? 1 : Math.tan(i / 200))))).toEqual([true, false, true]);
});
