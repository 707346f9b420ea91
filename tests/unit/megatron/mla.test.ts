import { describe, expect, it } from 'vitest';
import { parseHfConfig } from '../../../src/megatron/hf-config.ts';
import { publicHfConfig } from '../../../src/megatron/hf-configs.ts';
import { mlaFlags, mlaFromFlags, mlaFromHf, mlaParams, mlaRefusals, type MlaSetup } from '../../../src/megatron/mla.ts';

/** A small MLA: h 64, 4 heads, q_lora 16, kv_lora 8, d_nope 8, d_rope 4, d_v 8 (d_q = 12). */
const smallMla: MlaSetup = {
  qLoraRank: 16,
  kvLoraRank: 8,
  qkHeadDim: 8,
  qkPosEmbHeadDim: 4,
  vHeadDim: 8,
  qkLayernorm: true,
};

describe('multi-latent attention: flags, parameters, refusals (core_v0.19.0)', () => {
  it('counts the parameters of each projection by hand', () => {
    // q-down 64·16, q-up 16·4·12, kv-down 64·(8 + 4), kv-up 8·4·(8 + 8), proj 4·8·64, norms 16 + 8.
    expect(mlaParams(smallMla, 64, 4)).toEqual({
      qDown: 1024,
      qUp: 768,
      kvDown: 768,
      kvUp: 512,
      proj: 2048,
      norms: 24,
      total: 5144,
    });
    // Without --q-lora-rank the query is one [h, n·d_q] projection; without --qk-layernorm no norm gains.
    const direct = mlaParams({ ...smallMla, qLoraRank: undefined, qkLayernorm: false }, 64, 4);
    expect([direct.qDown, direct.qUp, direct.norms]).toEqual([0, 64 * 4 * 12, 0]);
  });

  it("reads the flags with arguments.py's defaults and writes them back", () => {
    const flags: Record<string, string | true> = {
      '--multi-latent-attention': true,
      '--q-lora-rank': '1536',
      '--kv-lora-rank': '512',
      '--v-head-dim': '128',
      '--qk-layernorm': true,
    };
    const x = mlaFromFlags((f) => flags[f])!;
    expect(x).toEqual({
      qLoraRank: 1536,
      kvLoraRank: 512,
      qkHeadDim: 128,
      qkPosEmbHeadDim: 64,
      vHeadDim: 128,
      qkLayernorm: true,
    });
    expect(mlaFlags(x)).toEqual([
      '--multi-latent-attention',
      '--q-lora-rank 1536',
      '--kv-lora-rank 512',
      '--qk-layernorm',
    ]);
    expect(mlaFromFlags(() => undefined)).toBeUndefined();
    expect(mlaFromFlags((f) => (f === '--multi-latent-attention' ? true : undefined))!.kvLoraRank).toBe(32);
    expect(() =>
      mlaFromFlags((f) => (f === '--kv-lora-rank' ? 'wide' : f === '--multi-latent-attention' ? true : undefined)),
    ).toThrow(/--kv-lora-rank needs a number/);
  });

  it("refuses GQA and non-whole widths with Megatron's lines", () => {
    expect(mlaRefusals(smallMla, { heads: 4, groups: 4 })).toEqual([]);
    const gqa = mlaRefusals(smallMla, { heads: 4, groups: 2 });
    expect(gqa.map((r) => r.source)).toEqual(['megatron/training/arguments.py:1892-1893']);
    expect(gqa[0]!.message).toMatch(/mutually exclusive.*--group-query-attention/);
    expect(mlaRefusals({ ...smallMla, kvLoraRank: 0 }, { heads: 4, groups: 4 })[0]!.message).toMatch(
      /--kv-lora-rank 0/,
    );
  });

  it("counts DeepSeek-V3's 671B total and 37B active parameters within 2%", () => {
    // DeepSeek-V3 Technical Report (arXiv:2412.19437, abstract): 671B total, 37B activated per
    // token, the main model without its 14B multi-token-prediction module. Counted here: untied
    // embedding and output [V, h], per layer the MLA block and two RMSNorms, the first 3 layers'
    // dense SwiGLU [h, 18432], the other 58 layers' router [h, 256], 256 routed and 1 shared
    // SwiGLU experts of 2048 (8 routed active), the final norm. 2%: "37B" is rounded to the
    // billion (±1.4%) and the report does not say whether it counts the embedding.
    const hf = parseHfConfig({ ...publicHfConfig('deepseek-v3')!.config });
    const { h, heads, ffn, vocab } = hf.model.sizes;
    const L = hf.model.layers;
    const moe = hf.moe!;
    const attn = mlaParams(mlaFromHf(hf.mla!), h, heads).total;
    const expert = 3 * h * moe.expertFfn;
    const moeLayers = L - moe.denseLayers;
    const common = 2 * vocab * h + L * (attn + 2 * h) + moe.denseLayers * 3 * h * ffn + moeLayers * h * moe.experts + h;
    const total = common + moeLayers * (moe.experts + moe.sharedExperts) * expert;
    const active = common + moeLayers * (moe.topK + moe.sharedExperts) * expert;
    expect(attn).toBe(187_107_328);
    expect(Math.abs(total / 671e9 - 1)).toBeLessThan(0.02);
    expect(Math.abs(active / 37e9 - 1)).toBeLessThan(0.02);
  });
});
