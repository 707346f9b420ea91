/**
 * One transformer layer's configuration, in Megatron's terms (layout [s, b, h], t = TP degree):
 * s --seq-length, b --micro-batch-size, h --hidden-size, heads --num-attention-heads,
 * groups --num-query-groups (groups = heads: multi-head attention), ffn --ffn-hidden-size
 * (SwiGLU: gate and up are each [h, ffn]), vocab --vocab-size (0: no embedding and no loss; the
 * layer then starts from a seeded [s, b, h] input and ends at a seeded upstream gradient),
 * tp --tensor-model-parallel-size, sp --sequence-parallel, seed for every logical tensor.
 */
export interface LayerConfig {
  readonly s: number;
  readonly b: number;
  readonly h: number;
  readonly heads: number;
  readonly groups: number;
  readonly ffn: number;
  readonly vocab: number;
  readonly tp: number;
  readonly sp: boolean;
  readonly seed: number;
  /** RoPE base θ (10000, as in Llama and Megatron's default). */
  readonly ropeBase: number;
  /** RMSNorm ε. */
  readonly eps: number;
  /**
   * Demonstration switch (seed 002 M035, docs/sources.md): skip the all-reduce of the replicated
   * RMSNorm weight gradients over the TP group under sequence parallel. Correct runs leave it false.
   */
  readonly skipSpNormGradAllReduce: boolean;
  /**
   * Chunked TP communication overlap (src/parallel/tp-overlap.ts): the MLP's column/row pair cuts
   * its all-gather, reduce-scatter (or, without SP, all-reduce) into this many chunks pipelined
   * with the GEMM chunks. Absent or 1: off.
   */
  readonly tpOverlapChunks?: number;
  /**
   * Megatron's --kv-channels: the per-head width d when it is not h / heads (Qwen3-MoE's head_dim
   * 128 at h = 2048, 32 heads). Q is [s, b, heads·d], K and V [s, b, groups·d], linear_proj reads
   * heads·d and writes h (attention.py:333-334, 413-415, core_v0.19.0). Absent: h / heads.
   */
  readonly kvChannels?: number;
}

/** The sizes a preset fixes, in display order; tp, sp and the switches come from the user. */
export const modelSizeKeys = [
  's',
  'b',
  'h',
  'heads',
  'groups',
  'ffn',
  'vocab',
] as const satisfies readonly (keyof LayerConfig)[];

/** The sizes a preset fixes (modelSizeKeys). */
export type ModelSizes = Pick<LayerConfig, (typeof modelSizeKeys)[number]>;

/** A projected job's model sizes: ModelSizes and the head width where it is not h / heads (--kv-channels). */
export type ModelShape = ModelSizes & Pick<LayerConfig, 'kvChannels'>;

/** The model sizes of a config (or of anything carrying them), nothing else. */
export const modelSizesOf = (c: ModelSizes): ModelSizes =>
  Object.fromEntries(modelSizeKeys.map((k) => [k, c[k]])) as Record<keyof ModelSizes, number>;

/** Llama's FFN size for SwiGLU: 8h/3 rounded up to a multiple of `multiple`. */
export function swigluFfn(h: number, multiple = 64): number {
  return Math.ceil((8 * h) / 3 / multiple) * multiple;
}

/** Named model sizes. */
export const presets = {
  /** Small enough to print every number: 8 tokens, h = 16, 4 heads in 2 KV groups, vocab 32. */
  classroom: { s: 8, b: 1, h: 16, heads: 4, groups: 2, ffn: 32, vocab: 32 },
  /** GPT-2 small's layer widths (h = 768, 12 heads, FFN 3072) at 32 tokens, no vocabulary. */
  'gpt2-layer': { s: 32, b: 1, h: 768, heads: 12, groups: 12, ffn: 3072, vocab: 0 },
  /** Grouped-query attention (8 heads, 2 KV groups), SwiGLU FFN = 8h/3 rounded to 64, vocab 512. */
  'llama-gqa': { s: 64, b: 1, h: 256, heads: 8, groups: 2, ffn: swigluFfn(256), vocab: 512 },
} as const satisfies Record<string, ModelSizes>;

/** A preset's name. */
export type PresetName = keyof typeof presets;

/** Every preset name, in display order. */
export const presetNames = Object.keys(presets) as PresetName[];

/** Defaults of everything a preset does not fix. */
export const configDefaults = {
  tp: 1,
  sp: false,
  seed: 1234,
  ropeBase: 10000,
  eps: 1e-5,
  skipSpNormGradAllReduce: false,
} as const;

/** A full configuration from a preset plus overrides. */
export function configFromPreset(name: PresetName, overrides: Partial<LayerConfig> = {}): LayerConfig {
  return { ...configDefaults, ...presets[name], ...overrides };
}

/** Per-head width d: --kv-channels where set, else h / heads (arguments.py:1291-1293, core_v0.19.0). */
export function headDim(c: Pick<LayerConfig, 'h' | 'heads' | 'kvChannels'>): number {
  return c.kvChannels ?? c.h / c.heads;
}
