import { describe, expect, it } from 'vitest';
import { gptActivationTerms, gptParameterShards } from '../../../src/accounting/gpt-layer-memory.ts';
import { configDefaults, type LayerConfig } from '../../../src/parallel/config.ts';
import { makePlan } from '../../../src/parallel/plan.ts';
import { splitLayers } from '../../../src/mesh/pipeline-split.ts';
import { stageModel } from '../../../src/projection/pipeline/stage-model.ts';

// s 8, b 2, h 16, 2 heads (MHA, d 8), ffn 4h = 64: small enough to count by hand.
const sizes = { s: 8, b: 2, h: 16, heads: 2, groups: 2, ffn: 64, vocab: 32 };
const config = (over: Partial<LayerConfig> = {}): LayerConfig => ({
  ...configDefaults,
  ...sizes,
  tp: 1,
  sp: false,
  ...over,
});
const planOf = async (over: Partial<LayerConfig> = {}) => (await makePlan(config(over))).plan;
const sumBytes = (xs: readonly { bytes: number }[]): number => xs.reduce((a, x) => a + x.bytes, 0);

describe("Megatron's GPT layer: memory beside the Llama plan", () => {
  it('parameters: fc1 [h, ffn] without a gate, biases, LayerNorm β, the position table (t = 1, by hand)', async () => {
    const block = await planOf({ vocab: 0 });
    // qkv 16·48 + 48, proj 16·16 + 16, fc1 16·64 + 64, fc2 64·16 + 16, two LayerNorms 2·(16 + 16).
    const layer = 768 + 48 + 256 + 16 + 1024 + 64 + 1024 + 16 + 64;
    expect(layer).toBe(3280);
    expect(sumBytes(gptParameterShards(block, 0, 8)) / 4).toBe(layer);
    const names = gptParameterShards(block, 0, 8).map((x) => x.name);
    expect(names).not.toContain('gate');
    // With the vocabulary: word embedding [32, 16], position table [8, 16], output [16, 32].
    const full = await planOf();
    expect(sumBytes(gptParameterShards(full, 0, 8)) / 4).toBe(layer + 512 + 128 + 512);
  });

  it('t = 2: column-parallel biases split, row-parallel biases and LayerNorm β whole on each rank', async () => {
    const block = await planOf({ vocab: 0, tp: 2 });
    // qkv 16·24 + 24, proj 8·16 + 16, fc1 16·32 + 32, fc2 32·16 + 16, LayerNorms 64.
    expect(sumBytes(gptParameterShards(block, 0, 8)) / 4).toBe(384 + 24 + 128 + 16 + 512 + 32 + 512 + 16 + 64);
  });

  it("activations: Korthikanti et al.'s sbh(34 + 5as/h) in 16-bit, plus LayerNorm's mean and rstd", async () => {
    const full = await planOf();
    const split = splitLayers(1, 1, 1);
    const setup = { sizes, flashAttention: false };
    const gpt = stageModel(full, await planOf({ vocab: 0 }), split, 'fp16', setup, 'gpt');
    // sbh = 256, a = 2: 256·(34 + 5·2·8/16) = 9984 B; the two LayerNorms' mean and rstd [s, b] in fp16: 4·16·2 = 128 B.
    expect(gpt.layer.full).toBe(9984 + 128);
    // Core attention: probabilities 2·2·64 el (fp16), the dropout mask (1 B) and output: 512 + 256 + 512.
    expect(gpt.layer.coreAttention).toBe(1280);
    // The Llama layer keeps SwiGLU's gate and up (one more s·b·ffn) and no masks or means.
    const llama = stageModel(full, await planOf({ vocab: 0 }), split, 'fp16', setup, 'llama');
    // + s·b·ffn in fp16; − three 1-byte masks [s, b, h], the attention dropout output, the two means.
    expect(llama.layer.full).toBe(gpt.layer.full + 2 * (8 * 2 * 64) - 3 * 256 - 512 - 2 * 32);
    // The embedding keeps token ids [s, b] (int32 elements priced at the dtype, as the Llama table does) and GPT its dropout mask.
    expect(gpt.embeddingActivation - llama.embeddingActivation).toBe(256);
    expect(gpt.stageParams[0]! - llama.stageParams[0]!).toBe(3280 - 4128 + 128);
  });

  it('flash attention keeps none of the dropout: the core terms give way to the log-sum-exp', async () => {
    const terms = gptActivationTerms(await planOf(), 0);
    const core = terms.filter((t) => t.part === 'coreAttention');
    expect(core.map((t) => t.op)).toEqual(['attn.softmax', 'attn.dropout', 'attn.dropout']);
    expect(core.filter((t) => t.mask).map((t) => t.bytes)).toEqual([2 * 2 * 64]);
    const full = await planOf();
    const flash = stageModel(
      full,
      await planOf({ vocab: 0 }),
      splitLayers(1, 1, 1),
      'fp16',
      { sizes, flashAttention: true },
      'gpt',
    );
    // fp32 log-sum-exp [b, nq, s] = 4·2·2·8 = 128 B.
    expect(flash.layer.coreAttention).toBe(128);
    expect(flash.layer.full).toBe(9984 + 128 - 1280 + 128);
  });
});
