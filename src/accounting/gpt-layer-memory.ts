import { numel } from '../core/shape.ts';
import type { LayerPlan } from '../parallel/plan-types.ts';
import { activationTerms, type ActivationTerm, type KeptKv } from './activations.ts';
import { bytesPerElement, parameterShards, type ParameterShard } from './parameters.ts';

/**
 * Memory of Megatron's GPT layer beside the playground's Llama-style plan. Megatron-LM
 * core_v0.19.0 defaults (megatron/training/arguments.py, TransformerConfig): gated_linear_unit
 * False (no --swiglu: linear_fc1 is [h, ffn], GeLU, linear_fc2 [ffn, h]), add_bias_linear True,
 * normalization LayerNorm, position_embedding_type learned_absolute, hidden_dropout and
 * attention_dropout 0.1. The plan's tables (parameters.ts, activations.ts) are transformed:
 *
 * Parameters, rank r (t-way TP, f = ffn/t, W/t the rank's QKV columns):
 *   fc1 is the plan's `up` half of wfc1 alone (the gate half is not there);
 *   biases: qkv [W/t] and fc1 [f] (ColumnParallelLinear: sharded), proj [h] and fc2 [h]
 *   (RowParallelLinear: whole on every rank, added after the all-reduce);
 *   LayerNorm β [h] beside each γ (replicated);
 *   the learned position table [max positions, h] on the embedding's stage (a plain
 *   torch.nn.Embedding in LanguageModelEmbedding: whole on every rank).
 *
 * Activations kept for backward (Korthikanti et al. 2022 §4.1, their table in bytes of 16-bit
 * activations: sbh(34 + 5as/h) per layer without TP), as changes to activationTerms:
 *   LayerNorm keeps the mean beside rstd ([s', b] each, s' = s/t with SP);
 *   the MLP keeps fc1's output (GeLU's input) and GeLU's output (fc2's input), sbf each, where
 *   SwiGLU keeps gate, up and their product;
 *   attention dropout keeps its mask (1 byte) and its output (P·V's operand): b·nq·s² each,
 *   core attention (FlashAttention regenerates both from the RNG state: none kept);
 *   bias-dropout-add after proj and after fc2 keeps a 1-byte mask [s', b, h] each;
 *   the embedding's dropout a 1-byte mask [s', b, h].
 * With t = 1, MHA, ffn = 4h and 16-bit activations the layer's terms add up to the paper's
 * sbh(34 + 5as/h) plus the four LayerNorm statistics 4·2·sb (unit test gpt-layer-memory).
 */
export function gptParameterShards(
  plan: Pick<LayerPlan, 'config' | 'ranks'>,
  rank: number,
  maxPositions: number,
): ParameterShard[] {
  const h = plan.config.h;
  const shard = (name: string, weight: ParameterShard['weight'], shape: number[], replicated: boolean) => ({
    name,
    weight,
    shape,
    bytes: numel(shape) * bytesPerElement,
    replicated,
  });
  const out: ParameterShard[] = [];
  for (const p of parameterShards(plan, rank)) {
    const cols = p.shape[p.shape.length - 1]!;
    switch (p.name) {
      case 'gate':
        break;
      case 'up':
        out.push({ ...p, name: 'fc1' }, shard('fc1 bias', p.weight, [cols], false));
        break;
      case 'down':
        out.push({ ...p, name: 'fc2' }, shard('fc2 bias', p.weight, [h], true));
        break;
      case 'qkv':
        out.push(p, shard('qkv bias', p.weight, [cols], false));
        break;
      case 'proj':
        out.push(p, shard('proj bias', p.weight, [h], true));
        break;
      case 'norm1':
      case 'norm2':
        out.push(p, shard(`${p.name} bias`, p.weight, [h], true));
        break;
      case 'embedding':
        out.push(p, shard('position embedding', p.weight, [maxPositions, h], true));
        break;
      default:
        out.push(p);
    }
  }
  return out;
}

/** The tensors rank r of Megatron's GPT layer keeps for backward (see gptParameterShards' note). */
export function gptActivationTerms(
  plan: Pick<LayerPlan, 'config' | 'ranks'>,
  rank: number,
  kv: KeptKv = 'groups',
): ActivationTerm[] {
  const c = plan.config;
  const own = plan.ranks[rank]!;
  const sl = own.tokens[1] - own.tokens[0];
  const nq = own.heads[1] - own.heads[0];
  const sh = c.sp && c.tp > 1 ? 's/t' : 's';
  const { s, b, h } = c;
  const float = (t: Omit<ActivationTerm, 'bytes'>): ActivationTerm => ({
    ...t,
    bytes: numel(t.shape) * bytesPerElement,
  });
  const mask = (t: Omit<ActivationTerm, 'bytes' | 'mask'>): ActivationTerm => ({
    ...t,
    bytes: numel(t.shape),
    mask: true,
  });
  const hiddenMask = (op: string, part: ActivationTerm['part']): ActivationTerm =>
    mask({ part, op, tensor: 'dropout mask (1 byte)', shape: [sl, b, h], formula: `${sh}·b·h` });
  const out: ActivationTerm[] = [];
  for (const t of activationTerms(plan, rank, kv)) {
    switch (t.op) {
      case 'embedding':
        out.push(t, hiddenMask('embedding.dropout', 'embedding'));
        break;
      case 'norm1':
      case 'norm2':
        out.push(t);
        if (t.tensor === 'rstd') out.push(float({ ...t, tensor: 'mean' }));
        break;
      case 'attn.softmax': {
        const shape = [b, nq, s, s];
        out.push(
          t,
          mask({ part: 'coreAttention', op: 'attn.dropout', tensor: 'mask (1 byte)', shape, formula: 'b·nq·s²' }),
          float({ part: 'coreAttention', op: 'attn.dropout', tensor: 'output', shape, formula: 'b·nq·s²' }),
        );
        break;
      }
      case 'proj':
        out.push(t, hiddenMask('proj.dropout', 'layer'));
        break;
      case 'mlp.gate/up':
        out.push({ ...t, op: 'mlp.fc1' });
        break;
      case 'mlp.swiglu':
        if (t.tensor === 'gate output') out.push({ ...t, op: 'mlp.gelu', tensor: 'input (fc1 output)' });
        break;
      case 'mlp.down':
        out.push({ ...t, op: 'mlp.fc2', tensor: 'input (GeLU output)' }, hiddenMask('mlp.dropout', 'layer'));
        break;
      default:
        out.push(t);
    }
  }
  return out;
}
