import { quoteMax, quoted } from '../core/quote.ts';
import type { ClusterModel } from './parallel-layout.ts';
import { moeDefaults, type MoeSetup } from './moe.ts';

/**
 * A model read from a Hugging Face `config.json` (transformers' field names for Llama, Mistral,
 * Qwen2, Qwen3, Mixtral, Qwen3-MoE and DeepSeek-V3): the sizes the projection's layer has, and what
 * it has not yet (the MoE and multi-latent-attention fields, carried as data).
 *
 *   hidden_size h · num_hidden_layers L · num_attention_heads heads · num_key_value_heads groups
 *   (absent: = heads, as LlamaConfig defaults it) · intermediate_size the dense FFN · vocab_size ·
 *   tie_word_embeddings (absent: false, the default of every one of these config classes) ·
 *   rope_theta (absent: 10000, LlamaConfig's default) · head_dim (Qwen3: Megatron's --kv-channels,
 *   kept in sizes.kvChannels where it is not h / heads; absent: h / heads).
 *   MoE: num_local_experts (Mixtral) / num_experts (Qwen3-MoE) / n_routed_experts (DeepSeek-V3),
 *   num_experts_per_tok top-k, n_shared_experts, moe_intermediate_size (Mixtral: intermediate_size),
 *   first_k_dense_replace (DeepSeek-V3's dense first layers).
 */
export interface HfModel {
  /** `model_type`, when the config names it. */
  readonly modelType?: string;
  /** The sizes without s and b (the job chooses those) and the depth. */
  readonly model: { readonly sizes: Omit<ClusterModel['sizes'], 's'>; readonly layers: number };
  readonly tiedEmbeddings: boolean;
  readonly ropeBase: number;
  readonly maxPositionEmbeddings?: number;
  /** Mixture of experts, when the config has experts. */
  readonly moe?: HfMoe;
  /** DeepSeek's multi-latent attention ranks and head widths, when present. */
  readonly mla?: HfMla;
  /** Fields this reader does not know, by name (read nothing from them). */
  readonly unknownFields: readonly string[];
  /** Values taken by default, and what the projection's layer does differently (one sentence each). */
  readonly notes: readonly string[];
  /** Why the projection cannot price this model yet (empty: it can). */
  readonly cannotProject: readonly string[];
}

/** Experts of a MoE config. */
export interface HfMoe {
  readonly experts: number;
  readonly topK: number;
  readonly sharedExperts: number;
  /** One expert's FFN width. */
  readonly expertFfn: number;
  /** Layers before the first MoE layer that keep the dense FFN (DeepSeek-V3's first_k_dense_replace). */
  readonly denseLayers: number;
}

/** Multi-latent attention (DeepSeek-V2/V3). */
export interface HfMla {
  readonly qLoraRank?: number;
  readonly kvLoraRank: number;
  readonly qkNopeHeadDim: number;
  readonly qkRopeHeadDim: number;
  readonly vHeadDim: number;
}

/** The model types whose field names this reader knows. */
export const hfModelTypes = ['llama', 'mistral', 'qwen2', 'qwen3', 'mixtral', 'qwen3_moe', 'deepseek_v3'] as const;

/** Fields read into HfModel. */
const readFields = new Set([
  'model_type',
  'hidden_size',
  'num_hidden_layers',
  'num_attention_heads',
  'num_key_value_heads',
  'intermediate_size',
  'vocab_size',
  'tie_word_embeddings',
  'rope_theta',
  'head_dim',
  'max_position_embeddings',
  'hidden_act',
  'num_local_experts',
  'num_experts',
  'n_routed_experts',
  'num_experts_per_tok',
  'n_shared_experts',
  'moe_intermediate_size',
  'first_k_dense_replace',
  'q_lora_rank',
  'kv_lora_rank',
  'qk_nope_head_dim',
  'qk_rope_head_dim',
  'v_head_dim',
]);

/**
 * Fields these families carry that change nothing the projection prices (ids, norms' ε, dtype,
 * initialisation, caching, dropout in inference, the router's training losses and scoring,
 * rope scaling for long context, sliding windows, multi-token prediction): known, not read.
 */
const knownFields = new Set([
  'architectures',
  'auto_map',
  'bos_token_id',
  'eos_token_id',
  'pad_token_id',
  'torch_dtype',
  'dtype',
  'transformers_version',
  'initializer_range',
  'rms_norm_eps',
  'use_cache',
  'attention_dropout',
  'attention_bias',
  'mlp_bias',
  'pretraining_tp',
  'rope_scaling',
  'sliding_window',
  'use_sliding_window',
  'max_window_layers',
  'layer_types',
  'router_aux_loss_coef',
  'router_jitter_noise',
  'output_router_logits',
  'norm_topk_prob',
  'decoder_sparse_step',
  'mlp_only_layers',
  'moe_layer_freq',
  'n_group',
  'topk_group',
  'topk_method',
  'routed_scaling_factor',
  'scoring_func',
  'aux_loss_alpha',
  'seq_aux',
  'ep_size',
  'num_nextn_predict_layers',
  'quantization_config',
]);

type Json = Record<string, unknown>;

/** A field's value in a message, cut as quoted() cuts it, so a 10 MB value never lands whole in one. */
const shown = (x: unknown): string => {
  const json = JSON.stringify(x) ?? String(x);
  return json.length <= quoteMax ? json : quoted(json);
};

/** A whole number ≥ `min` from field `name`, or undefined when absent; throws on anything else. */
function whole(cfg: Json, name: string, min: number): number | undefined {
  const x = cfg[name];
  if (x === undefined || x === null) return undefined;
  if (typeof x !== 'number' || !Number.isInteger(x) || x < min)
    throw new Error(`config.json: ${name} is ${shown(x)}; write a whole number ≥ ${min}.`);
  return x;
}

/** What each required field is, for the message that says it is missing. */
const required = {
  hidden_size: 'the hidden width h',
  num_hidden_layers: 'the number of transformer layers',
  num_attention_heads: 'the attention heads',
  vocab_size: 'the vocabulary size',
} as const;

/**
 * Reads a Hugging Face config.json (its text or its parsed object). Throws with what is wrong and
 * what to write when it is not JSON, not an object, lacks a required field or has a field of the
 * wrong kind; names unknown fields in `unknownFields` and what cannot be priced in `cannotProject`.
 */
export function parseHfConfig(input: string | Json): HfModel {
  let cfg: unknown = input;
  if (typeof input === 'string') {
    try {
      cfg = JSON.parse(input);
    } catch (e) {
      throw new Error(`config.json is not JSON (${(e as Error).message}); paste the file's text as it is.`, {
        cause: e,
      });
    }
  }
  if (typeof cfg !== 'object' || cfg === null || Array.isArray(cfg))
    throw new Error('config.json must be one JSON object of fields (hidden_size, num_hidden_layers, …).');
  const c = cfg as Json;
  const missing = (Object.keys(required) as (keyof typeof required)[]).filter((k) => c[k] === undefined);
  if (missing.length)
    throw new Error(
      `config.json lacks ${missing.map((k) => `${k} (${required[k]})`).join(', ')}: add ${missing.length > 1 ? 'them' : 'it'} (every Hugging Face config of ${hfModelTypes.join(', ')} has them).`,
    );
  const notes: string[] = [];
  const cannot: string[] = [];
  const modelType = typeof c.model_type === 'string' ? c.model_type : undefined;
  if (modelType !== undefined && !(hfModelTypes as readonly string[]).includes(modelType))
    notes.push(`model_type ${quoted(modelType)} is not one of ${hfModelTypes.join(', ')}: read by their field names.`);
  const h = whole(c, 'hidden_size', 1)!;
  const layers = whole(c, 'num_hidden_layers', 1)!;
  const heads = whole(c, 'num_attention_heads', 1)!;
  const vocab = whole(c, 'vocab_size', 1)!;
  const kv = whole(c, 'num_key_value_heads', 1);
  if (kv === undefined) notes.push(`num_key_value_heads absent: ${heads} (= num_attention_heads, no GQA).`);
  const groups = kv ?? heads;
  if (heads % groups !== 0)
    throw new Error(`config.json: num_attention_heads ${heads} is not a multiple of num_key_value_heads ${groups}.`);
  // head_dim is Megatron's --kv-channels; without it d = h / heads, which arguments.py:1291-1293 asserts whole.
  const headDim = whole(c, 'head_dim', 1);
  if (headDim === undefined && h % heads !== 0)
    throw new Error(
      `config.json: hidden_size ${h} is not a multiple of num_attention_heads ${heads}; give head_dim (the per-head width) or fix them.`,
    );
  if (headDim !== undefined && headDim % 2 !== 0)
    throw new Error(
      `config.json: head_dim is ${headDim}; RoPE pairs element k with k + head_dim/2, so write an even number.`,
    );
  const kvChannels = headDim !== undefined && headDim !== h / heads ? headDim : undefined;
  if (kvChannels !== undefined)
    notes.push(
      `head_dim ${kvChannels} ≠ hidden_size / num_attention_heads = ${h / heads}: priced as Megatron's --kv-channels ${kvChannels} (Q ${heads}·${kvChannels} = ${heads * kvChannels} wide, K and V ${groups}·${kvChannels} each, linear_proj ${heads * kvChannels} → ${h}).`,
    );
  if (modelType === 'qwen3' || modelType === 'qwen3_moe')
    notes.push(
      "Qwen3's q_norm and k_norm (RMSNorm over each head's d, Megatron's --qk-layernorm) are not priced: 2·d weights and two memory-bound passes over Q and K per layer.",
    );
  const act = c.hidden_act;
  if (act !== undefined && act !== 'silu')
    cannot.push(`hidden_act ${shown(act)}: the projection's Llama layer is SwiGLU (silu).`);
  const tie = c.tie_word_embeddings;
  if (tie !== undefined && typeof tie !== 'boolean')
    throw new Error(`config.json: tie_word_embeddings is ${shown(tie)}; write true or false.`);
  const rope = c.rope_theta;
  if (rope !== undefined && !(typeof rope === 'number' && rope > 0))
    throw new Error(`config.json: rope_theta is ${shown(rope)}; write a positive number.`);

  const experts = whole(c, 'num_local_experts', 1) ?? whole(c, 'num_experts', 1) ?? whole(c, 'n_routed_experts', 1);
  const denseFfn = whole(c, 'intermediate_size', 1);
  let moe: HfMoe | undefined;
  if (experts !== undefined && experts > 1) {
    const topK = whole(c, 'num_experts_per_tok', 1);
    if (topK === undefined)
      throw new Error(
        'config.json has experts but no num_experts_per_tok (the experts each token is routed to, top-k).',
      );
    const expertFfn = whole(c, 'moe_intermediate_size', 1) ?? denseFfn;
    if (expertFfn === undefined)
      throw new Error(
        'config.json has experts but neither moe_intermediate_size nor intermediate_size (an expert’s FFN).',
      );
    moe = {
      experts,
      topK,
      sharedExperts: whole(c, 'n_shared_experts', 0) ?? 0,
      expertFfn,
      denseLayers: whole(c, 'first_k_dense_replace', 0) ?? 0,
    };
    notes.push(
      `a mixture of experts (${experts} experts, top-${topK}, expert FFN ${expertFfn}${moe.sharedExperts ? `, ${moe.sharedExperts} shared` : ''}${moe.denseLayers ? `, the first ${moe.denseLayers} layers dense` : ''}): priced as Megatron's --num-experts ${experts} --moe-router-topk ${topK} --moe-ffn-hidden-size ${expertFfn}${moe.sharedExperts ? ` --moe-shared-expert-intermediate-size ${moe.sharedExperts * expertFfn}` : ''}${moe.denseLayers ? ` --moe-layer-freq "([0]*${moe.denseLayers}+[1]*${layers - moe.denseLayers})"` : ''} (--hf-config fills the MoE flags not given); the router's scoring and group limits are not read.`,
    );
  } else if (denseFfn === undefined)
    throw new Error('config.json lacks intermediate_size (the FFN width): a dense model needs it.');

  const kvLoraRank = whole(c, 'kv_lora_rank', 1);
  let mla: HfMla | undefined;
  if (kvLoraRank !== undefined) {
    const need = (n: string): number => {
      const x = whole(c, n, 1);
      if (x === undefined) throw new Error(`config.json has kv_lora_rank but no ${n} (multi-latent attention).`);
      return x;
    };
    const qLoraRank = whole(c, 'q_lora_rank', 1);
    mla = {
      ...(qLoraRank !== undefined && { qLoraRank }),
      kvLoraRank,
      qkNopeHeadDim: need('qk_nope_head_dim'),
      qkRopeHeadDim: need('qk_rope_head_dim'),
      vHeadDim: need('v_head_dim'),
    };
    notes.push(
      `multi-latent attention (kv_lora_rank ${kvLoraRank}): priced as Megatron's --multi-latent-attention${mla.qLoraRank !== undefined ? ` --q-lora-rank ${mla.qLoraRank}` : ''} --kv-lora-rank ${kvLoraRank} --qk-head-dim ${mla.qkNopeHeadDim} --qk-pos-emb-head-dim ${mla.qkRopeHeadDim} --v-head-dim ${mla.vHeadDim} --qk-layernorm (mlaFromHf).`,
    );
  }
  if (modelType === 'qwen2')
    notes.push("Qwen2's q, k, v projections have biases; the Llama layer prices none (3 vectors per layer).");
  if (tie === undefined) notes.push('tie_word_embeddings absent: false (the default of these config classes).');
  if (rope === undefined) notes.push('rope_theta absent: 10000 (LlamaConfig’s default).');
  const unknownFields = Object.keys(c).filter((k) => !readFields.has(k) && !knownFields.has(k));
  const maxPos = whole(c, 'max_position_embeddings', 1);
  return {
    ...(modelType !== undefined && { modelType }),
    model: {
      sizes: {
        h,
        heads,
        groups,
        ffn: denseFfn ?? moe!.expertFfn,
        vocab,
        ...(kvChannels !== undefined && !mla && { kvChannels }),
      },
      layers,
    },
    tiedEmbeddings: tie === true,
    ropeBase: typeof rope === 'number' ? rope : 10000,
    ...(maxPos !== undefined && { maxPositionEmbeddings: maxPos }),
    ...(moe && { moe }),
    ...(mla && { mla }),
    unknownFields,
    notes,
    cannotProject: cannot,
  };
}

/**
 * s and b of a model read from its config.json, which names neither: Megatron-LM's own MoE
 * example at core_v0.19.0 (examples/mixtral/train_mixtral_8x7b_distributed.sh:30 --seq-length 4096,
 * :69 --micro-batch-size 1; examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh:51 also 4096), s cut to
 * max_position_embeddings where that is shorter.
 */
export const hfJobDefaults = {
  s: 4096,
  b: 1,
  source:
    'Megatron-LM core_v0.19.0 examples/mixtral/train_mixtral_8x7b_distributed.sh (--seq-length 4096, --micro-batch-size 1)',
} as const;

/** s and b of a config's model (hfJobDefaults): `npm run project -- --hf-config` and the page's cluster model. */
export const hfJobSizes = (hf: Pick<HfModel, 'maxPositionEmbeddings'>): { s: number; b: number } => ({
  s: Math.min(hfJobDefaults.s, hf.maxPositionEmbeddings ?? hfJobDefaults.s),
  b: hfJobDefaults.b,
});

/**
 * The MoE setup of a Hugging Face config's experts (hf-config.ts HfMoe) over L layers, Megatron's
 * defaults elsewhere (EP 1): --num-experts, --moe-router-topk, --moe-ffn-hidden-size, the shared
 * experts as one MLP of sharedExperts × the expert FFN (DeepseekV3MoE's shared_experts) and the first
 * dense layers as --moe-layer-freq's list (first_k_dense_replace). The router's scoring and group
 * limits are not read. `npm run project -- --hf-config` and the page's config control both use it.
 */
export function moeFromHf(x: HfMoe, layers: number): MoeSetup {
  return {
    ...moeDefaults(x.experts, x.expertFfn),
    topk: x.topK,
    ...(x.sharedExperts > 0 && { sharedFfn: x.sharedExperts * x.expertFfn }),
    ...(x.denseLayers > 0 && {
      layerFreq: Array.from({ length: layers }, (_, i): 0 | 1 => (i < x.denseLayers ? 0 : 1)),
    }),
  };
}
