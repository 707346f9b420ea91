import type { HfMla } from './hf-config.ts';

// Megatron-Core's multi-latent attention (DeepSeek-V2/V3) as core_v0.19.0 builds it:
// megatron/core/transformer/multi_latent_attention.py (MLASelfAttention), its flags
// (megatron/training/arguments.py _add_mla_args, :3379-3407) and its config
// (transformer_config.py MLATransformerConfig, :2899-2970).

/**
 * The MLA flags of a job. Per layer, n heads, hidden h:
 *   linear_q_down_proj  [h, q_lora]                       (absent without --q-lora-rank: linear_q_proj [h, n·(d_nope + d_rope)])
 *   q_layernorm         RMSNorm over q_lora (with --qk-layernorm)
 *   linear_q_up_proj    [q_lora, n·(d_nope + d_rope)]
 *   linear_kv_down_proj [h, kv_lora + d_rope]             (the latent and the shared rope key)
 *   kv_layernorm        RMSNorm over kv_lora (with --qk-layernorm)
 *   linear_kv_up_proj   [kv_lora, n·(d_nope + d_v)]
 *   linear_proj         [n·d_v, h]
 * (multi_latent_attention.py:507-630; d_nope = qk_head_dim, d_rope = qk_pos_emb_head_dim.)
 */
export interface MlaSetup {
  /** --q-lora-rank (absent: the query is projected directly, arguments.py:3381 defaults it to None). */
  readonly qLoraRank?: number;
  /** --kv-lora-rank. */
  readonly kvLoraRank: number;
  /** --qk-head-dim: the query/key head width without position embedding (d_nope). */
  readonly qkHeadDim: number;
  /** --qk-pos-emb-head-dim: the rotary part of each query/key head (d_rope). */
  readonly qkPosEmbHeadDim: number;
  /** --v-head-dim. */
  readonly vHeadDim: number;
  /**
   * --qk-layernorm: RMSNorm over each latent before its up projection, fused into it
   * (TELayerNormColumnParallelLinear, gpt_layer_specs.py:106-115); without it the latents are not
   * normalized (q_layernorm and kv_layernorm are IdentityOp, :129-130). DeepSeek-V2/V3 normalize them.
   */
  readonly qkLayernorm: boolean;
}

/** arguments.py:3381-3390 defaults (q_lora_rank None, kv_lora_rank 32, 128, 64, 128). */
export const mlaArgDefaults: MlaSetup = {
  kvLoraRank: 32,
  qkHeadDim: 128,
  qkPosEmbHeadDim: 64,
  vHeadDim: 128,
  qkLayernorm: false,
};

/** Query/key head width: q_head_dim = qk_head_dim + qk_pos_emb_head_dim (multi_latent_attention.py:165). */
export const mlaQkHeadWidth = (x: MlaSetup): number => x.qkHeadDim + x.qkPosEmbHeadDim;

/** Parameters of one MLA block at TP = 1, by module (weights and norm gains; no biases: bias=False throughout). */
export interface MlaParams {
  readonly qDown: number;
  readonly qUp: number;
  readonly kvDown: number;
  readonly kvUp: number;
  readonly proj: number;
  /** With --qk-layernorm, the latents' norm gains (q_lora and kv_lora). */
  readonly norms: number;
  readonly total: number;
}

/** MlaParams for hidden h and n heads (shapes above). */
export function mlaParams(x: MlaSetup, h: number, heads: number): MlaParams {
  const dq = mlaQkHeadWidth(x);
  const qDown = x.qLoraRank === undefined ? 0 : h * x.qLoraRank;
  const qUp = (x.qLoraRank ?? h) * heads * dq;
  const kvDown = h * (x.kvLoraRank + x.qkPosEmbHeadDim);
  const kvUp = x.kvLoraRank * heads * (x.qkHeadDim + x.vHeadDim);
  const proj = heads * x.vHeadDim * h;
  const norms = x.qkLayernorm ? (x.qLoraRank ?? 0) + x.kvLoraRank : 0;
  return { qDown, qUp, kvDown, kvUp, proj, norms, total: qDown + qUp + kvDown + kvUp + proj + norms };
}

/** What an MLA rule reads of the job besides the MLA flags. */
export interface MlaJob {
  readonly heads: number;
  /** --num-query-groups (GQA when below heads). */
  readonly groups: number;
}

/** One Megatron refusal: its source line at core_v0.19.0 and its reason. */
export interface MlaRefusal {
  readonly source: string;
  readonly message: string;
}

/**
 * The rules of core_v0.19.0 the MLA flags break, with their lines; [] when Megatron builds the layer.
 * GQA is refused (arguments.py:1892-1893). Widths must be whole and ≥ 1: every one is a Linear's
 * dimension. Megatron itself does not check (kv_lora + d_rope) % t for the unfused layer the
 * default spec builds (its down projections are duplicated, TELinear parallel_mode='duplicated',
 * multi_latent_attention.py:524-526); only the fused one (--mla-down-proj-fusion, :1353-1360) does.
 */
export function mlaRefusals(x: MlaSetup, job: MlaJob): MlaRefusal[] {
  const out: MlaRefusal[] = [];
  const A = 'megatron/training/arguments.py';
  const whole = (v: number): boolean => Number.isInteger(v) && v >= 1;
  const widths: [string, number | undefined][] = [
    ['--q-lora-rank', x.qLoraRank],
    ['--kv-lora-rank', x.kvLoraRank],
    ['--qk-head-dim', x.qkHeadDim],
    ['--qk-pos-emb-head-dim', x.qkPosEmbHeadDim],
    ['--v-head-dim', x.vHeadDim],
  ];
  for (const [flag, v] of widths)
    if (v !== undefined && !whole(v))
      out.push({
        source: `${A}:3379-3390`,
        message: `${flag} ${v}: a Linear's width, give a whole number ≥ 1.`,
      });
  if (job.groups !== job.heads)
    out.push({
      source: `${A}:1892-1893`,
      message: `Group query attention is mutually exclusive with multi latent attention: drop --group-query-attention (--num-query-groups ${job.groups} of ${job.heads} heads).`,
    });
  return out;
}

/** The MLA flags of a launch line (defaults left out, as a launch line has them). */
export function mlaFlags(x: MlaSetup): string[] {
  const f = ['--multi-latent-attention'];
  if (x.qLoraRank !== undefined) f.push(`--q-lora-rank ${x.qLoraRank}`);
  f.push(`--kv-lora-rank ${x.kvLoraRank}`);
  if (x.qkHeadDim !== mlaArgDefaults.qkHeadDim) f.push(`--qk-head-dim ${x.qkHeadDim}`);
  if (x.qkPosEmbHeadDim !== mlaArgDefaults.qkPosEmbHeadDim) f.push(`--qk-pos-emb-head-dim ${x.qkPosEmbHeadDim}`);
  if (x.vHeadDim !== mlaArgDefaults.vHeadDim) f.push(`--v-head-dim ${x.vHeadDim}`);
  if (x.qkLayernorm) f.push('--qk-layernorm');
  return f;
}

/** The MLA flags as argv (flag, value, flag, …). */
export const mlaArgv = (x: MlaSetup): string[] => mlaFlags(x).flatMap((f) => f.split(' '));

/**
 * The MLA flags of a launch's arguments (`get`: a flag's value, true for a switch, undefined when
 * absent) as arguments.py defaults them; undefined without --multi-latent-attention. A width that
 * is not a number is refused naming the flag.
 */
export function mlaFromFlags(get: (flag: string) => string | true | undefined): MlaSetup | undefined {
  if (get('--multi-latent-attention') === undefined) return undefined;
  const num = (flag: string): number | undefined => {
    const v = get(flag);
    if (v === undefined) return undefined;
    const n = typeof v === 'string' ? Number(v) : NaN;
    if (!Number.isFinite(n)) throw new Error(`${flag} needs a number (a width, e.g. ${flag} 512).`);
    return n;
  };
  const q = num('--q-lora-rank');
  return {
    ...(q !== undefined && { qLoraRank: q }),
    kvLoraRank: num('--kv-lora-rank') ?? mlaArgDefaults.kvLoraRank,
    qkHeadDim: num('--qk-head-dim') ?? mlaArgDefaults.qkHeadDim,
    qkPosEmbHeadDim: num('--qk-pos-emb-head-dim') ?? mlaArgDefaults.qkPosEmbHeadDim,
    vHeadDim: num('--v-head-dim') ?? mlaArgDefaults.vHeadDim,
    qkLayernorm: get('--qk-layernorm') !== undefined,
  };
}

/**
 * The MLA setup of a Hugging Face DeepSeek-V2/V3 config's fields (hf-config.ts HfMla):
 * qk_nope_head_dim is Megatron's qk_head_dim, qk_rope_head_dim its qk_pos_emb_head_dim; the
 * latents are normalized (DeepseekV3Attention's q_a_layernorm and kv_a_layernorm), which
 * Megatron builds with --qk-layernorm.
 */
export const mlaFromHf = (x: HfMla): MlaSetup => ({
  ...(x.qLoraRank !== undefined && { qLoraRank: x.qLoraRank }),
  kvLoraRank: x.kvLoraRank,
  qkHeadDim: x.qkNopeHeadDim,
  qkPosEmbHeadDim: x.qkRopeHeadDim,
  vHeadDim: x.vHeadDim,
  qkLayernorm: true,
});
