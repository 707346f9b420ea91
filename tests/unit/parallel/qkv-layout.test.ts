import { describe, expect, test } from 'vitest';
import { configFromPreset, type LayerConfig } from '../../../src/parallel/config.ts';
import { localDims } from '../../../src/parallel/dims.ts';
import { rankOwnership } from '../../../src/parallel/ownership.ts';
import { gatheredQkv, logicalRuns, qkvColsOfRank, qkvOutWidth, qkvPieces } from '../../../src/parallel/qkv-layout.ts';
import { cutShard, logicalShape, logicalWeight, placeShard, shardLayout } from '../../../src/parallel/weights.ts';

/** Multi-query attention, 8 heads of d = 4 sharing one KV group: W = (8 + 2)·4 = 40. */
const mqa = (tp: number): LayerConfig =>
  configFromPreset('classroom', { s: 4, h: 32, heads: 8, groups: 1, ffn: 16, vocab: 0, tp });

describe("Megatron-Core's per-group interleaved linear_qkv layout", () => {
  test('llama-gqa (8 heads, 2 groups, d = 32): [q0..q3 | k0 | v0 | q4..q7 | k1 | v1], W = 384', () => {
    const c = configFromPreset('llama-gqa');
    expect(qkvOutWidth(c)).toBe(384);
    expect(qkvPieces(c).map((p) => [p.kind, p.group, p.at, p.logical, p.n])).toEqual([
      ['q', 0, 0, 0, 128],
      ['k', 0, 128, 256, 32],
      ['v', 0, 160, 320, 32],
      ['q', 1, 192, 128, 128],
      ['k', 1, 320, 288, 32],
      ['v', 1, 352, 352, 32],
    ]);
  });

  // Hand-checked from attention.py get_query_key_value_tensors (core_v0.19.0): t = 8, groups = 2,
  // so t/groups = 4 ranks per group; W/t = 48; idx = ⌊r / 4⌋ picks block [idx·192, (idx+1)·192);
  // query heads (r mod 4)·(heads/t) … of the block's heads/groups = 4.
  test('llama-gqa at t = 8, rank 5: columns [240, 288), group block 1, query head 5, k1 at 320, v1 at 352', () => {
    const c = configFromPreset('llama-gqa', { tp: 8 });
    expect(qkvColsOfRank(c, 5)).toEqual([240, 288]);
    expect(gatheredQkv(c, 5)).toEqual({
      block: 1,
      heads: [5, 6],
      q: { c0: 192 + 32, n: 32 },
      k: { c0: 192 + 128, n: 32 },
      v: { c0: 192 + 160, n: 32 },
    });
    // Its slice is block 1's columns 48..96: the second half of q5 and all of q6, logical 128 + 48 = 176 on.
    expect(logicalRuns(c, [240, 288])).toEqual([{ logical: 176, local: 0, n: 48 }]);
  });

  test('llama-gqa at t = 8, rank 2: its slice cuts across q and k (q3, then the first half of k0)', () => {
    const c = configFromPreset('llama-gqa', { tp: 8 });
    expect(qkvColsOfRank(c, 2)).toEqual([96, 144]);
    expect(logicalRuns(c, [96, 144])).toEqual([
      { logical: 96, local: 0, n: 32 },
      { logical: 256, local: 32, n: 16 },
    ]);
    expect(gatheredQkv(c, 2)).toMatchObject({ block: 0, heads: [2, 3], q: { c0: 64, n: 32 } });
  });

  test('classroom at t = 4: rank 1 computes k0 and v0 but reads query head 1, which rank 0 computes', () => {
    const c = configFromPreset('classroom', { tp: 4 });
    expect(qkvColsOfRank(c, 1)).toEqual([8, 16]);
    expect(logicalRuns(c, [8, 16])).toEqual([
      { logical: 16, local: 0, n: 4 },
      { logical: 24, local: 4, n: 4 },
    ]);
    expect(gatheredQkv(c, 1)).toEqual({
      block: 0,
      heads: [1, 2],
      q: { c0: 4, n: 4 },
      k: { c0: 8, n: 4 },
      v: { c0: 12, n: 4 },
    });
  });

  test.each([
    ['llama-gqa t = 4', configFromPreset('llama-gqa', { tp: 4 })],
    ['llama-gqa t = 8', configFromPreset('llama-gqa', { tp: 8 })],
    ['classroom t = 4', configFromPreset('classroom', { tp: 4 })],
    ['MQA t = 2', mqa(2)],
    ['MQA t = 8 (W/t = 5 cuts every head)', mqa(8)],
  ])('%s: every linear_qkv column has exactly one owner, and the ranks’ query heads are Megatron’s', (_w, c) => {
    const W = qkvOutWidth(c);
    const owners = new Array<number>(W).fill(0);
    const own = rankOwnership(c);
    for (const o of own) {
      const runs = logicalRuns(c, o.qkvCols);
      expect(runs.reduce((a, r) => a + r.n, 0)).toBe(W / c.tp);
      for (const r of runs) for (let j = r.logical; j < r.logical + r.n; j++) owners[j]++;
      // Megatron's index formulas give the rank the same query heads as the even head split.
      expect(gatheredQkv(c, o.rank).heads).toEqual(o.heads);
      expect([gatheredQkv(c, o.rank).block]).toEqual(o.kvGroups);
    }
    expect(owners.every((n) => n === 1)).toBe(true);
  });

  test.each([
    ['llama-gqa t = 8', configFromPreset('llama-gqa', { tp: 8 })],
    ['MQA t = 8', mqa(8)],
    ['llama-gqa t = 2 (groups ≥ t)', configFromPreset('llama-gqa', { tp: 2 })],
  ])('%s: cutting wqkv into the ranks’ shards and placing them back gives the logical weight', (_w, c) => {
    const D = localDims(c);
    const shape = logicalShape(c, 'wqkv');
    const w = logicalWeight(c, 'wqkv');
    const back = new Float32Array(w.length).fill(NaN);
    for (const o of rankOwnership(c)) {
      const layout = shardLayout(c, D, o, 'wqkv');
      expect(layout.shape).toEqual([c.h, qkvOutWidth(c) / c.tp]);
      placeShard(cutShard(w, shape, layout), back, shape, layout);
    }
    expect(Array.from(back)).toEqual(Array.from(w));
  });
});
