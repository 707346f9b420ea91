import { activationTerms } from '../../accounting/activations.ts';
import { gptActivationTerms, gptParameterShards } from '../../accounting/gpt-layer-memory.ts';
import { bytesPerElement, parameterShards } from '../../accounting/parameters.ts';
import { dtypeBytes, type TrainDtype } from '../../hardware/dtype.ts';
import type { LayerArch } from '../../megatron/layer-arch.ts';
import type { TrainingSetup } from '../../megatron/training-setup.ts';
import type { LayerPlan } from '../../parallel/plan-types.ts';
import { holdsEmbedding, holdsOutput, type PipelineSplit } from '../../mesh/pipeline-split.ts';
import type { LayerActivations } from '../layer/recompute.ts';

/**
 * What each pipeline stage holds on rank 0 of its TP group, from the plans' own tables
 * (parameters.ts, activations.ts: float32 there, elements = bytes/4, re-priced at the dtype):
 * parameters per chunk (n layers, the embedding [V/t, h] on the first virtual stage, the output
 * [h, V/t] on the last unless tied with p = 1, where the output reads the embedding's weight;
 * with p > 1 the last stage keeps its own copy, kept equal by an all-reduce — Megatron's
 * shared embedding), and one micro-batch's activations by part. With `layerArch` gpt the tables are
 * Megatron's GPT layer's (gpt-layer-memory.ts: two-matrix GeLU MLP, biases, LayerNorm, learned
 * positions on the embedding's stage, dropout masks), as the time prices it (priced-ops.ts).
 */
export interface StageModel {
  /** chunkParams[i][c]. */
  readonly chunkParams: readonly (readonly number[])[];
  readonly stageParams: readonly number[];
  /** One transformer layer's parameters (its TP shard): an FSDP unit. */
  readonly layerParams: number;
  readonly embeddingParams: number;
  /** One layer's activations (flash attention applied). */
  readonly layer: LayerActivations;
  /**
   * Kept by the embedding (token ids) and by the output stage: the final norm's saved input and
   * statistics (GPTModel's final_layernorm, transformer_block.py:692-693, the same terms as a
   * layer's first norm), the output layer's input, the loss's per-token max and Σ exp.
   */
  readonly embeddingActivation: number;
  readonly outputActivation: number;
  /**
   * Vocab-parallel cross entropy (megatron/core/tensor_parallel/cross_entropy.py) upcasts the
   * logits [s, b, V/t] to fp32 and keeps the fp32 softmax for backward: `lossSoftmax` = 4·s·b·V/t
   * from the loss's forward to its backward; the 16-bit logits live beside their fp32 copy
   * during the forward (`logitsForward`, 0 in fp32 where .float() is the same tensor).
   */
  readonly lossSoftmax: number;
  readonly logitsForward: number;
  /**
   * The loss's backward returns its gradient in fp32 (the softmax, updated in place,
   * cross_entropy.py:186-210) for 16-bit logits; autograd casts it to the input's dtype, so the
   * 16-bit logits gradient, 2·s·b·V/t bytes, lives beside the fp32 one and through the output
   * layer's backward (0 in fp32, where they are one tensor).
   */
  readonly logitsGradient: number;
}

/** The ops whose saved tensors live inside the dense MLP (Llama's and GPT's tables). */
const mlpInternalOps: ReadonlySet<string> = new Set(['mlp.swiglu', 'mlp.down', 'mlp.gelu', 'mlp.fc2']);
/** The linears whose saved input is a norm's output (QKV after the first norm, fc1 after the second). */
const normOutputOps: ReadonlySet<string> = new Set(['qkv', 'mlp.gate/up', 'mlp.fc1']);

/** Parameters, per chunk and stage, and activations by part (see StageModel). */
export function stageModel(
  full: LayerPlan,
  block: LayerPlan,
  split: PipelineSplit,
  dtype: TrainDtype,
  setup: Pick<TrainingSetup, 'tiedEmbeddings' | 'flashAttention' | 'sizes'>,
  layerArch: LayerArch = 'llama',
): StageModel {
  const el = (bytes: number): number => bytes / bytesPerElement;
  const gpt = layerArch === 'gpt';
  // GPT's position table: --max-position-embeddings, taken as the sequence length (Megatron's examples set them equal).
  const shardsOf = (p: LayerPlan) => (gpt ? gptParameterShards(p, 0, setup.sizes.s) : parameterShards(p, 0));
  const shards = shardsOf(full);
  const params = (keep: (x: (typeof shards)[number]) => boolean): number =>
    el(shards.filter(keep).reduce((a, x) => a + x.bytes, 0));
  // The word embedding (what tied embeddings share with the output layer) and the position table.
  const embeddingParams = params((x) => x.weight === 'emb' && x.name === 'embedding');
  const positionParams = params((x) => x.weight === 'emb' && x.name !== 'embedding');
  const outputParams = params((x) => x.weight === 'wout');
  const layerParams = el(shardsOf(block).reduce((a, x) => a + x.bytes, 0));
  const tiedOnOneStage = (setup.tiedEmbeddings ?? false) && split.p === 1;
  const chunkParams = split.layers.map((row, i) =>
    row.map(
      (n, ch) =>
        n * layerParams +
        (holdsEmbedding(i, ch) ? embeddingParams + positionParams : 0) +
        (holdsOutput(split, i, ch) && !tiedOnOneStage ? outputParams : 0),
    ),
  );
  const b = dtypeBytes[dtype];
  // Without flash attention Megatron's local DotProductAttention keeps K and V repeated to the query
  // heads (dot_product_attention.py:169-175); flash attention reads the KV groups as they are.
  const terms = (gpt ? gptActivationTerms : activationTerms)(full, 0, setup.flashAttention ? 'groups' : 'heads');
  // A dropout mask is one byte per element in every dtype; the rest is re-priced at the dtype.
  const sum = (keep: (t: (typeof terms)[number]) => boolean): number =>
    terms.filter(keep).reduce((a, t) => a + (t.mask ? t.bytes : el(t.bytes) * b), 0);
  const c = block.config;
  const own = block.ranks[0]!;
  const nq = own.heads[1] - own.heads[0];
  // Flash attention keeps the fp32 log-sum-exp [b, nq, s] instead of the probabilities (Dao et al. 2022, §3.1).
  const lse = 4 * c.b * nq * c.s;
  const core = sum((t) => t.part === 'coreAttention');
  const layerAll = sum((t) => t.part === 'layer' || t.part === 'coreAttention');
  const flash = setup.flashAttention ?? false;
  const logits = terms.filter((t) => t.part === 'loss' && t.shape.length === 3).reduce((a, t) => a + el(t.bytes), 0);
  return {
    chunkParams,
    stageParams: chunkParams.map((row) => row.reduce((a, x) => a + x, 0)),
    layerParams,
    embeddingParams,
    layer: {
      full: flash ? layerAll - core + lse : layerAll,
      coreAttention: flash ? lse : core,
      input: (own.tokens[1] - own.tokens[0]) * c.b * c.h * b,
      // Inside the dense MLP checkpoint: fc1's output and the activation's (SwiGLU's gate and up, GeLU's input, fc2's input).
      mlp: sum((t) => mlpInternalOps.has(t.op)),
      // Under SP the command uses Transformer Engine's spec, whose norms are fused into the linear after
      // them (IdentityOp): layernorm recompute has nothing to drop there (transformer_layer.py:451, :498-499).
      normOutputs: c.sp && c.tp > 1 ? 0 : sum((t) => normOutputOps.has(t.op) && t.tensor === 'input'),
    },
    embeddingActivation: sum((t) => t.part === 'embedding'),
    outputActivation:
      sum((t) => t.op === 'norm1') + sum((t) => t.part === 'output') + sum((t) => t.part === 'loss') - logits * b,
    lossSoftmax: 4 * logits,
    logitsForward: dtype === 'fp32' ? 0 : logits * b,
    logitsGradient: dtype === 'fp32' ? 0 : logits * b,
  };
}
