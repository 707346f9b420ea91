import { describe, expect, it } from 'vitest';
import { parseHfConfig } from '../../../src/megatron/hf-config.ts';
import { publicHfConfig, publicHfConfigs } from '../../../src/megatron/hf-configs.ts';

const cfg = (name: string) => ({ ...publicHfConfig(name)!.config });

describe('a model from its Hugging Face config.json', () => {
  it('reads every built-in public config, each with its source, naming no field unknown', () => {
    expect(publicHfConfigs.map((c) => c.name)).toEqual([
      'llama-3.1-8b',
      'llama-3.1-70b',
      'mistral-7b-v0.1',
      'qwen2.5-7b',
      'qwen3-8b',
      'mixtral-8x7b-v0.1',
      'qwen3-30b-a3b',
      'qwen3-235b-a22b',
      'deepseek-v3',
    ]);
    for (const c of publicHfConfigs) {
      expect(c.source).toMatch(/^https:\/\/huggingface\.co\/.+\/config\.json$/);
      expect(parseHfConfig({ ...c.config }).unknownFields).toEqual([]);
    }
  });

  it('maps the dense field names onto the sizes: Llama 3.1 70B, Qwen2.5 7B, Qwen3 8B (head_dim = h/heads)', () => {
    const llama = parseHfConfig(cfg('llama-3.1-70b'));
    expect(llama.model).toEqual({ sizes: { h: 8192, heads: 64, groups: 8, ffn: 28672, vocab: 128256 }, layers: 80 });
    expect([llama.tiedEmbeddings, llama.ropeBase, llama.maxPositionEmbeddings]).toEqual([false, 500000, 131072]);
    expect(llama.cannotProject).toEqual([]);
    expect(parseHfConfig(cfg('qwen2.5-7b')).model.sizes).toEqual({
      h: 3584,
      heads: 28,
      groups: 4,
      ffn: 18944,
      vocab: 152064,
    });
    expect(parseHfConfig(cfg('qwen2.5-7b')).notes.join(' ')).toMatch(/q, k, v projections have biases/);
    const qwen3 = parseHfConfig(cfg('qwen3-8b'));
    expect([qwen3.model.layers, qwen3.model.sizes.ffn, qwen3.cannotProject]).toEqual([36, 12288, []]);
  });

  it('carries the MoE and MLA fields of Mixtral, Qwen3-MoE and DeepSeek-V3 and names the Megatron flags they are priced as', () => {
    const mixtral = parseHfConfig(cfg('mixtral-8x7b-v0.1'));
    expect(mixtral.moe).toEqual({ experts: 8, topK: 2, sharedExperts: 0, expertFfn: 14336, denseLayers: 0 });
    expect(mixtral.cannotProject).toEqual([]);
    expect(mixtral.notes.join(' ')).toMatch(
      /8 experts, top-2, expert FFN 14336.*--num-experts 8 --moe-router-topk 2 --moe-ffn-hidden-size 14336 \(--hf-config/,
    );
    const qwen = parseHfConfig(cfg('qwen3-30b-a3b'));
    expect(qwen.moe).toEqual({ experts: 128, topK: 8, sharedExperts: 0, expertFfn: 768, denseLayers: 0 });
    // Qwen3-30B-A3B's heads are 128 wide over a 2048 hidden: Megatron's --kv-channels 128, not d = h/heads = 64.
    expect(qwen.cannotProject).toEqual([]);
    expect(qwen.model.sizes).toEqual({ h: 2048, heads: 32, groups: 4, ffn: 6144, vocab: 151936, kvChannels: 128 });
    expect(qwen.notes.join(' ')).toMatch(
      /head_dim 128 ≠ hidden_size \/ num_attention_heads = 64: priced as Megatron's --kv-channels 128 \(Q 32·128 = 4096 wide, K and V 4·128 each, linear_proj 4096 → 2048\)/,
    );
    const big = parseHfConfig(cfg('qwen3-235b-a22b'));
    expect([big.model.layers, big.model.sizes.kvChannels, big.moe?.expertFfn, big.moe?.experts]).toEqual([
      94, 128, 1536, 128,
    ]);
    const ds = parseHfConfig(cfg('deepseek-v3'));
    expect(ds.moe).toEqual({ experts: 256, topK: 8, sharedExperts: 1, expertFfn: 2048, denseLayers: 3 });
    expect(ds.mla).toEqual({ qLoraRank: 1536, kvLoraRank: 512, qkNopeHeadDim: 128, qkRopeHeadDim: 64, vHeadDim: 128 });
    expect(ds.model.sizes.ffn).toBe(18432);
    expect(ds.cannotProject).toEqual([]);
    expect(ds.notes.join(' ')).toMatch(/--moe-layer-freq "\(\[0\]\*3\+\[1\]\*58\)"/);
    expect(ds.notes.join(' ')).toMatch(
      /--multi-latent-attention --q-lora-rank 1536 --kv-lora-rank 512 .*--qk-layernorm/,
    );
  });

  it('refuses what is missing or malformed, saying what to write, and names fields it does not know', () => {
    expect(() => parseHfConfig('{"hidden_size": 512')).toThrow(/not JSON/);
    expect(() => parseHfConfig('[1]')).toThrow(/one JSON object/);
    expect(() => parseHfConfig({ hidden_size: 512, num_hidden_layers: 2 })).toThrow(
      /lacks num_attention_heads \(the attention heads\), vocab_size \(the vocabulary size\): add them/,
    );
    const small = { hidden_size: 512, num_hidden_layers: 2, num_attention_heads: 8, vocab_size: 1000 };
    expect(() => parseHfConfig(small)).toThrow(/lacks intermediate_size \(the FFN width\)/);
    const dense = { ...small, intermediate_size: 1408 };
    expect(() => parseHfConfig({ ...dense, hidden_size: 512.5 })).toThrow(/hidden_size is 512.5; write a whole number/);
    expect(() => parseHfConfig({ ...dense, num_key_value_heads: 3 })).toThrow(
      /not a multiple of num_key_value_heads 3/,
    );
    expect(() => parseHfConfig({ ...dense, tie_word_embeddings: 'yes' })).toThrow(/write true or false/);
    expect(() => parseHfConfig({ ...dense, num_experts: 4 })).toThrow(/no num_experts_per_tok/);
    const m = parseHfConfig({ ...dense, my_field: 1, rope_scaling: null });
    expect(m.unknownFields).toEqual(['my_field']);
    expect(m.model.sizes.groups).toBe(8);
    expect(m.notes).toEqual([
      'num_key_value_heads absent: 8 (= num_attention_heads, no GQA).',
      'tie_word_embeddings absent: false (the default of these config classes).',
      'rope_theta absent: 10000 (LlamaConfig’s default).',
    ]);
    expect(parseHfConfig({ ...dense, hidden_act: 'gelu' }).cannotProject[0]).toMatch(/SwiGLU/);
    // h % heads must be whole only without head_dim (arguments.py:1291-1293); head_dim must be even (RoPE).
    expect(() => parseHfConfig({ ...dense, num_attention_heads: 6 })).toThrow(
      /hidden_size 512 is not a multiple of num_attention_heads 6; give head_dim/,
    );
    expect(parseHfConfig({ ...dense, num_attention_heads: 6, head_dim: 96 }).model.sizes.kvChannels).toBe(96);
    expect(parseHfConfig({ ...dense, head_dim: 64 }).model.sizes.kvChannels).toBeUndefined();
    expect(() => parseHfConfig({ ...dense, head_dim: 63 })).toThrow(/head_dim is 63; .* write an even number/);
    expect(parseHfConfig({ ...dense, model_type: 'gemma' }).notes[0]).toMatch(/"gemma" is not one of/);
  });
});
