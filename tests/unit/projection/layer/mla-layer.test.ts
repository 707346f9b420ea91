import { describe, expect, it } from 'vitest';
import { gpus } from '../../../../src/hardware/gpus.ts';
import type { MlaSetup } from '../../../../src/megatron/mla.ts';
import {
  mlaActivations,
  mlaCollectives,
  mlaCompute,
  mlaFlops,
  mlaGemms,
  type MlaShapes,
} from '../../../../src/projection/layer/mla-layer.ts';

/** h 64, 4 heads, q_lora 16, kv_lora 8, d_nope 8, d_rope 4, d_v 8 (d_q = 12); s 32, b 2, t 2 with SP: S = 64 rows, T = 32 held, 2 heads a rank. */
const mla: MlaSetup = {
  qLoraRank: 16,
  kvLoraRank: 8,
  qkHeadDim: 8,
  qkPosEmbHeadDim: 4,
  vHeadDim: 8,
  qkLayernorm: true,
};
const x: MlaShapes = { seq: 32, batch: 2, hidden: 64, heads: 4, tp: 2, sp: true, mla };

describe("an MLA layer's GEMMs, FLOPs, memory and TP traffic on one rank", () => {
  it('splits the projections as the default spec builds them', () => {
    expect(mlaGemms(x).map((g) => [g.gemm, g.split, g.shape.M, g.shape.K, g.shape.N])).toEqual([
      ['q-down', 'duplicated', 32, 64, 16],
      ['q-up', 'column', 64, 16, 24],
      ['kv-down', 'duplicated', 32, 64, 12],
      ['kv-up', 'column', 64, 8, 32],
      ['proj', 'row', 64, 16, 64],
    ]);
    // Without SP every rank runs the duplicated down projections on all 64 rows.
    expect(mlaGemms({ ...x, sp: false })[0]!.shape.M).toBe(64);
  });

  it('counts FLOPs by hand: 3 × the forward GEMMs, attention over the full s × s', () => {
    // Forward GEMMs 2·M·N·K: 65536 + 49152 + 49152 + 32768 + 131072 = 327680.
    // Attention: 3 · 2·b·s²·(n/t)·(d_q + d_v) = 6·2·1024·2·20. Model (t = 1): 6 · 64 rows · 5120
    // weights + the attention of all 4 heads.
    expect(mlaFlops(x)).toEqual({ linear: 3 * 327680, attention: 491520, model: 6 * 64 * 5120 + 2 * 491520 });
  });

  it('keeps the activations each node saves; mla_up_proj would drop the query, key and value', () => {
    expect(mlaActivations(x, 'bf16', true)).toEqual({
      downInput: 32 * 64 * 2,
      latents: 2 * 32 * 24 * 2,
      kPosEmb: 64 * 4 * 2,
      qkv: 64 * 2 * (12 + 12 + 8) * 2,
      coreOut: 64 * 2 * 8 * 2,
      softmax: 2 * 2 * 32 * 4,
      total: 4096 + 3072 + 512 + 8192 + 2048 + 512,
      kvLatent: 32 * 12 * 2,
    });
    // Unfused attention keeps the probabilities b·(n/t)·s² in place of the log-sum-exp.
    expect(mlaActivations(x, 'bf16', false).softmax).toBe(2 * 2 * 32 * 32 * 2);
  });

  it('gathers the latents, not the hidden states, under SP', () => {
    const c = mlaCollectives(x);
    expect(c.forward.map((k) => [k.what, k.kind, k.elements])).toEqual([
      ['q-latent', 'allGather', 64 * 16],
      ['kv-latent', 'allGather', 64 * 8],
      ['k-pos-emb', 'allGather', 64 * 4],
      ['proj-output', 'reduceScatter', 64 * 64],
    ]);
    expect(c.backward.map((k) => k.kind)).toEqual(['allGather', 'reduceScatter', 'reduceScatter', 'reduceScatter']);
    expect(mlaCollectives({ ...x, sp: false }).forward).toEqual([
      { what: 'proj-output', kind: 'allReduce', elements: 4096 },
    ]);
    expect(mlaCollectives({ ...x, tp: 1 })).toEqual({ forward: [], backward: [] });
  });

  it('prices every term, and the up-projection recompute as a part of the forward', () => {
    const h100 = gpus['h100-sxm'];
    const big: MlaShapes = {
      seq: 4096,
      batch: 1,
      hidden: 7168,
      heads: 128,
      tp: 8,
      sp: true,
      mla: { ...mla, qLoraRank: 1536, kvLoraRank: 512, qkHeadDim: 128, qkPosEmbHeadDim: 64, vHeadDim: 128 },
    };
    const c = mlaCompute(big, h100, 'bf16', 'bf16', 'fused');
    const sum = (t: readonly { us: number }[]): number => t.reduce((a, k) => a + k.us, 0);
    for (const t of [...c.forward, ...c.backward]) expect(t.us).toBeGreaterThan(0);
    expect(sum(c.backward)).toBeGreaterThan(1.5 * sum(c.forward));
    expect(sum(c.upProjRecompute)).toBeGreaterThan(0);
    expect(sum(c.upProjRecompute)).toBeLessThan(sum(c.forward));
  });
});
