import { numel } from '../core/shape.ts';
import { headDim } from '../parallel/config.ts';
import type { LayerConfig } from '../parallel/config.ts';
import type { LayerPlan } from '../parallel/plan-types.ts';
import { gathersQkv, qkvOutWidth } from '../parallel/qkv-layout.ts';
import { bytesPerElement } from './parameters.ts';

/**
 * Activation memory = the tensors a rank keeps from forward for backward (no recomputation),
 * for one micro-batch, float32. Per op, with s, b, h, d = h/heads, and on this rank nq query
 * heads, nkv KV groups, f = ffn/t FFN columns, vl = V_padded/t vocabulary rows; s' = s/t with
 * SP, s' = s without:
 *
 * | op                  | saved for backward                    | elements            |
 * |---------------------|---------------------------------------|---------------------|
 * | norm1               | input x, rstd                         | s'bh + s'b          |
 * | qkv (column)        | its input, norm1's output             | s'bh (SP: re-gathered for wgrad) |
 * | qkv.gather (groups < t) | nothing (see below)               | 0                   |
 * | attn.scores (QKᵀ)   | Q and K after RoPE                    | sb·(nq + nkv)·d     |
 * | attn.softmax        | probabilities P (also P·V's operand)  | b·nq·s²             |
 * | attn.context (P·V)  | V                                     | sb·nkv·d            |
 * | proj (row)          | its input, the context                | sb·nq·d             |
 * | norm2               | input, rstd                           | s'bh + s'b          |
 * | mlp.gate/up (column)| their shared input                    | s'bh (SP: re-gathered) |
 * | mlp.swiglu          | gate and up outputs                   | 2·sbf               |
 * | mlp.down (row)      | its input, silu(gate)·up              | sbf                 |
 * | embedding (vocab)   | token ids (int32)                     | sb                  |
 * | output (vocab)      | its input (SP: the shard, re-gathered) | s'bh               |
 * | loss (vocab)        | logits; per-token max and Σ exp; targets | sb·vl + 3sb      |
 *
 * Layer total (no vocabulary), MHA with groups ≥ t, in elements per rank:
 *   no SP: 4sbh + 2sb + (4sbh + b·heads·s² + 3sb·ffn)/t;   SP: all of it /t.
 *
 * Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models",
 * §4.1–4.2.2) count, in bytes of 16-bit activations with dropout, MHA and a 4h GeLU MLP:
 *   no TP sbh(34 + 5as/h); TP sbh(10 + 24/t + 5as/(ht)); TP+SP sbh/t·(34 + 5as/h).
 * Ours differs: float32 (4 B per element, their 2); no dropout, so no masks (their sbh + as²b
 * per block) and no dropout output (2as²b), leaving one s² tensor per head; RMSNorm keeps rstd
 * [s, b] (they count LayerNorm inputs only); SwiGLU keeps gate and up (2f per token) where GeLU
 * keeps one 4h input; Q and K are kept after RoPE (RoPE itself saves nothing: its backward is the
 * inverse rotation). GQA: Megatron's local spec (DotProductAttention, dot_product_attention.py:169-175
 * at core_v0.19.0) repeats K and V to the rank's nq query heads before its batched GEMMs, which
 * then save the repeated [s, b, nq, d] tensors (repeat_interleave's own backward saves nothing), so
 * K and V count nq·d each, as Megatron keeps them; the playground's kernels read the nkv groups
 * directly and keep nkv·d (less by 2·sb·(nq − nkv)·d). `kv` chooses: 'groups' (the playground's
 * kernels: the page's memory budget) or 'heads' (Megatron's local spec: the cluster projection). The shape of the result is theirs:
 * without SP the four [s, b, h] inputs of the norms and column-parallel linears are replicated
 * on every rank; SP divides them by t too (the linears re-gather their input for wgrad).
 * The output layer, a ColumnParallelLinear too, keeps the [s/t, b, h] shard under SP and
 * re-gathers it for wgrad, as Megatron does.
 * With groups < t (Megatron-Core since core_v0.16, attention.py get_query_key_value_tensors)
 * linear_qkv's [s, b, W/t] output is all-gathered to [s, b, W], W = (heads + 2·groups)·d, and the
 * rank copies out its nq query heads and its one group's K and V (nkv = 1): nothing of the
 * gathered tensor is kept for backward (the all-gather's backward is a reduce-scatter and a slice's
 * backward needs only sizes, so autograd saves neither), only Q, K, V as above. The gathered tensor
 * and, in backward, its gradient are transient: gatheredQkvBytes counts them for the memory budget.
 */
/**
 * Which part of the model keeps a tensor: the embedding, the transformer layer, the layer's core
 * attention alone (the s² scores/probabilities: what selective recomputation drops and flash
 * attention never stores), the output layer, or the loss.
 */
export type ActivationPart = 'embedding' | 'layer' | 'coreAttention' | 'output' | 'loss';

export interface ActivationTerm {
  readonly part: ActivationPart;
  /** The op that keeps it (the forward op whose backward reads it). */
  readonly op: string;
  /** What is kept. */
  readonly tensor: string;
  readonly shape: readonly number[];
  readonly bytes: number;
  /** The element count in the paper's letters, e.g. "s/t·b·h" or "b·nq·s²". */
  readonly formula: string;
  /** A dropout mask: one byte per element in every training dtype (`bytes` = its elements). */
  readonly mask?: true;
}

/**
 * How wide the kept K and V are: 'groups' = the rank's nkv KV groups (the playground's attention
 * kernels), 'heads' = repeated to its nq query heads (Megatron's local-spec DotProductAttention).
 */
export type KeptKv = 'groups' | 'heads';

/** The tensors rank r keeps for backward (see the table above), in forward order. */
export function activationTerms(
  plan: Pick<LayerPlan, 'config' | 'ranks'>,
  rank: number,
  kv: KeptKv = 'groups',
): ActivationTerm[] {
  const c = plan.config;
  const own = plan.ranks[rank];
  const { s, b, h } = c;
  const d = headDim(c);
  const nq = own.heads[1] - own.heads[0];
  const f = own.ffn[1] - own.ffn[0];
  const vl = own.vocab[1] - own.vocab[0];
  const sl = own.tokens[1] - own.tokens[0];
  const nkv = kv === 'heads' ? nq : own.kvGroups.length;
  const kvName = kv === 'heads' ? 'nq' : 'nkv';
  const repeated = kv === 'heads' && nq > own.kvGroups.length ? ', repeated to nq heads' : '';
  const sp = c.sp && c.tp > 1;
  const sh = sp ? 's/t' : 's';
  const term = (
    op: string,
    tensor: string,
    shape: number[],
    formula: string,
    part: ActivationPart = 'layer',
  ): ActivationTerm => ({
    part,
    op,
    tensor,
    shape,
    bytes: numel(shape) * bytesPerElement,
    formula,
  });
  const out: ActivationTerm[] = [];
  if (c.vocab > 0) out.push(term('embedding', 'token ids', [s, b], 's·b', 'embedding'));
  out.push(
    term('norm1', 'input', [sl, b, h], `${sh}·b·h`),
    term('norm1', 'rstd', [sl, b], `${sh}·b`),
    term('qkv', 'input', [sl, b, h], `${sh}·b·h`),
    term('attn.scores', 'Q (after RoPE)', [s, b, nq, d], 's·b·nq·d'),
    term('attn.scores', `K (after RoPE${repeated})`, [s, b, nkv, d], `s·b·${kvName}·d`),
    term('attn.softmax', 'probabilities', [b, nq, s, s], 'b·nq·s²', 'coreAttention'),
    term('attn.context', `V${repeated ? ` (${repeated.slice(2)})` : ''}`, [s, b, nkv, d], `s·b·${kvName}·d`),
    term('proj', 'input (context)', [s, b, nq * d], 's·b·nq·d'),
    term('norm2', 'input', [sl, b, h], `${sh}·b·h`),
    term('norm2', 'rstd', [sl, b], `${sh}·b`),
    term('mlp.gate/up', 'input', [sl, b, h], `${sh}·b·h`),
    term('mlp.swiglu', 'gate output', [s, b, f], 's·b·f'),
    term('mlp.swiglu', 'up output', [s, b, f], 's·b·f'),
    term('mlp.down', 'input', [s, b, f], 's·b·f'),
  );
  if (c.vocab > 0) {
    out.push(
      term('output', 'input', [sl, b, h], `${sh}·b·h`, 'output'),
      term('loss', 'logits', [s, b, vl], 's·b·vl', 'loss'),
      term('loss', 'max', [s, b], 's·b', 'loss'),
      term('loss', 'sum exp', [s, b], 's·b', 'loss'),
      // The gradient kernel reads the targets again; Megatron's VocabParallelCrossEntropy keeps
      // them too (save_for_backward(exp_logits, target_mask, masked_target_1d), cross_entropy.py).
      term('loss', 'targets', [s, b], 's·b', 'loss'),
    );
  }
  return out;
}

/** Σ bytes of activationTerms(plan, rank, kv). */
export function activationBytes(
  plan: Pick<LayerPlan, 'config' | 'ranks'>,
  rank: number,
  kv: KeptKv = 'groups',
): number {
  return activationTerms(plan, rank, kv).reduce((a, x) => a + x.bytes, 0);
}

/**
 * Bytes of the gathered QKV [s, b, W] a rank holds for a moment when groups < t (forward: until its
 * q, k, v are copied out; backward: the gradient until it is reduce-scattered): 4·s·b·W, W =
 * (heads + 2·groups)·d; 0 when groups ≥ t (nothing is gathered).
 */
export function gatheredQkvBytes(
  c: Pick<LayerConfig, 's' | 'b' | 'h' | 'heads' | 'groups' | 'kvChannels' | 'tp'>,
): number {
  return gathersQkv(c) ? c.s * c.b * qkvOutWidth(c) * bytesPerElement : 0;
}
