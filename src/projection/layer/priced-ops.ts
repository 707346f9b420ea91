import { stateBytesPerParam } from '../../accounting/training-memory.ts';
import { numel } from '../../core/shape.ts';
import { dtypeBytes, type TrainDtype } from '../../hardware/dtype.ts';
import type { AttentionKernel, AttentionPass } from '../../hardware/flash-attention.ts';
import type { GemmPrecision } from '../../hardware/gpus.ts';
import type { GemmShape } from '../../hardware/kernel-time.ts';
import { headDim } from '../../parallel/config.ts';
import type { GemmProduct, LayerPlan, PlannedGemmOp, PlannedKernelOp, PlannedOp } from '../../parallel/plan-types.ts';
import { castBytesPerElement } from '../../megatron/low-precision.ts';
import { linearPrecisionOf, linearRecipeOf, type CrossEntropyKernels, type KernelOptions } from './kernel-options.ts';

/**
 * The ops the projection prices, made from the playground's plan by a typed transform: the
 * plan is always the Llama-style layer (RMSNorm, SwiGLU, RoPE, no biases, no dropout, unfused
 * attention); the kernel options turn its ops into what the projected job runs, without
 * touching the layer itself. Every priced op belongs to one plan op (`planIndex`), so the
 * schedule keeps the plan's order and dependencies; a plan op can price as nothing (a dropped
 * gate GEMM, a softmax inside FlashAttention), as itself, or as several kernels.
 *
 * Rules (`rule`):
 *   plan             the op as planned: GEMM, memory-bound kernel (kernelBytes), collective.
 *   flash-attention  --attention-backend flash|fused: each forward Q·Kᵀ GEMM becomes the
 *                    FlashAttention forward of its heads (F = 2·its FLOPs, halved by the causal
 *                    mask); each backward dP GEMM (context dA) the FlashAttention backward (2.5·F);
 *                    the P·V GEMMs, the other backward attention GEMMs and the softmaxes price as
 *                    nothing (inside the fused kernels).
 *   fp8-cast         --fp8-format (or --fp4-format): the linear layers' GEMMs (q, k, v, qkv, proj,
 *                    gate, up, down: fprop, dgrad and wgrad — Transformer Engine's
 *                    Linear/LayerNormLinear) run in fp8 (fp4 under NVFP4); the output layer
 *                    (logits) and the attention BMMs stay in the training dtype. Each fprop and
 *                    dgrad first quantizes its activation operand A into its row-major and
 *                    transposed copies with their scales, castBytesPerElement(recipe) per element
 *                    (low-precision.ts: delayed, read 2 B and write 1 + 1; the wgrad reuses them);
 *                    the weight casts, once per step, are quantized-params.ts's.
 *   gpt-gelu         --arch gpt: the MLP is GeLU over one up-projection: the gate GEMMs price as
 *                    nothing, SwiGLU as GeLU (forward reads x and writes y: 2 elements per output;
 *                    backward reads x and dy, writes dx: 3).
 *   gpt-layernorm    LayerNorm in place of RMSNorm: the same passes over x and dy, plus dβ = Σ dy
 *                    in the weight-gradient kernel (one more read of dy).
 *   gpt-position     learned absolute positions in place of RoPE: the RoPE kernels price as
 *                    nothing; the embedding adds its [s, h] position rows (read the table slice and
 *                    the word embeddings, write the sum) and its backward the position gradient
 *                    (read dy, write [s, h]).
 *   gpt-bias         biases on the linear layers: the bias add is fused in the GEMM's epilogue
 *                    (free); its gradient Σ dy over tokens is one read of each wgrad's dY.
 *   gpt-dropout      hidden dropout 0.1: the residual add becomes bias-dropout-add (Megatron's
 *                    fused kernel: + a 1-byte mask written per element); each backward residual
 *                    add gets a dropout backward (read dy and the mask, write dx). Embedding
 *                    dropout likewise. Attention dropout 0.1 on the unfused path: a kernel on the
 *                    probabilities after the softmax (read, write, mask) and its backward; inside
 *                    FlashAttention it is free.
 *   grad-accumulation  with `gradAccumulationFusion`: each linear wgrad GEMM accumulates into
 *                    Megatron's main_grad (β = 1): C read and written in the gradients' format
 *                    (fp32 under bf16), where the plan's writes it once in 16 bits.
 *   megatron-cross-entropy  with `crossEntropy: 'megatron'`: the vocab-parallel cross entropy's
 *                    kernels as Megatron runs them, the logits upcast to fp32 and every pass over
 *                    them in fp32, in place (crossEntropyKernels below); `megatron-fused` and
 *                    `te-fused` its fused paths (fusedCrossEntropyKernels, teCrossEntropyKernels).
 */
export type PricingRule =
  | 'plan'
  | 'flash-attention'
  | 'fp8-cast'
  | 'gpt-gelu'
  | 'gpt-layernorm'
  | 'gpt-position'
  | 'gpt-bias'
  | 'gpt-dropout'
  | 'grad-accumulation'
  | 'megatron-cross-entropy';

/** What one priced kernel costs, by the model that prices it. */
export type PricedCost =
  | { readonly kind: 'gemm'; readonly shape: GemmShape; readonly precision: GemmPrecision; readonly flops: number }
  | { readonly kind: 'memory'; readonly bytes: number }
  | {
      readonly kind: 'flash';
      readonly pass: AttentionPass;
      readonly flops: number;
      readonly headDim: number;
      /** The sequence the kernel attends over (the scores' N) and which library runs it. */
      readonly seq: number;
      readonly kernel: AttentionKernel;
    }
  | { readonly kind: 'collective' };

/** One priced kernel (or collective) and the plan op it belongs to. */
export interface PricedOp {
  readonly planIndex: number;
  readonly rule: PricingRule;
  readonly cost: PricedCost;
}

/** The GEMM products of Transformer Engine's linear layers (fp8 under the fp8 recipe; TP comm overlap's GEMMs). */
export const linearProducts: ReadonlySet<GemmProduct> = new Set(['q', 'k', 'v', 'qkv', 'proj', 'gate', 'up', 'down']);

/** Fraction of Q·Kᵀ and P·V a causal FlashAttention executes (blocks above the diagonal skipped). */
export const causalFraction = 0.5;

/**
 * Bytes a memory-bound kernel moves: every input read once and the output written once, at the
 * training dtype. The embedding lookup reads only the s·b rows it gathers (plus the ids), not
 * its whole [V/t, h] table.
 */
export function kernelBytes(op: PlannedOp, dtype: TrainDtype): number {
  const b = dtypeBytes[dtype];
  const out = numel(op.outShape);
  if (op.kind === 'kernel' && op.kernel === 'embedding') return numel(op.inShapes[0] ?? []) * 4 + 2 * out * b;
  return (op.inShapes.reduce((a, s) => a + numel(s), 0) + out) * b;
}

/**
 * The priced ops of `plan` under `kernels`, in plan order (rules above); `auto` attention must be
 * resolved for the GPU first (resolveKernels).
 */
export function pricedOps(plan: LayerPlan, dtype: TrainDtype, kernels: KernelOptions): PricedOp[] {
  if (kernels.attentionBackend === 'auto')
    throw new Error('pricedOps: resolve --attention-backend auto for the GPU first (resolveKernels).');
  const out: PricedOp[] = [];
  const b = dtypeBytes[dtype];
  const gpt = kernels.layerArch === 'gpt';
  const flash = kernels.attentionBackend !== 'unfused';
  const d = headDim(plan.config);
  const memory = (planIndex: number, rule: PricingRule, bytes: number): void => {
    out.push({ planIndex, rule, cost: { kind: 'memory', bytes } });
  };
  const dropoutBytes = (elems: number): number => elems * (2 * b + 1);
  for (const op of plan.ops) {
    const i = op.index;
    switch (op.kind) {
      case 'collective':
        out.push({ planIndex: i, rule: 'plan', cost: { kind: 'collective' } });
        break;
      case 'gemm':
        gemmRules(op, dtype, kernels, gpt, flash, d, out);
        break;
      case 'kernel':
        kernelRules(
          op,
          dtype,
          gpt,
          flash,
          kernels.crossEntropy ?? 'plan',
          memory,
          dropoutBytes,
          plan.config.s * plan.config.h * b,
        );
        break;
    }
  }
  return out;
}

function gemmRules(
  op: PlannedGemmOp,
  dtype: TrainDtype,
  kernels: KernelOptions,
  gpt: boolean,
  flash: boolean,
  headDim: number,
  out: PricedOp[],
): void {
  const { site } = op.gemm;
  const i = op.index;
  if (site.product === 'scores' || site.product === 'context') {
    if (!flash) {
      out.push({ planIndex: i, rule: 'plan', cost: gemmCost(op, dtype) });
      return;
    }
    // Q·Kᵀ and P·V of one group have equal FLOPs: the forward kernel does both. The scores'
    // and dP's N is the key sequence; fused = cuDNN's kernel, flash = FlashAttention's.
    const fwd = 2 * op.gemm.flops * causalFraction;
    const seq = op.gemm.N;
    const kernel: AttentionKernel = kernels.attentionBackend === 'fused' ? 'fused' : 'flash';
    if (site.product === 'scores' && site.computes === 'C')
      out.push({
        planIndex: i,
        rule: 'flash-attention',
        cost: { kind: 'flash', pass: 'forward', flops: fwd, headDim, seq, kernel },
      });
    if (site.product === 'context' && site.computes === 'dA')
      out.push({
        planIndex: i,
        rule: 'flash-attention',
        cost: { kind: 'flash', pass: 'backward', flops: 2.5 * fwd, headDim, seq, kernel },
      });
    return;
  }
  if (gpt && site.product === 'gate') return;
  const linear = linearProducts.has(site.product);
  const recipe = linear ? linearRecipeOf(kernels) : undefined;
  const precision = recipe ? linearPrecisionOf(kernels, dtype) : dtype;
  if (recipe && site.computes !== 'dB') {
    const a = op.inShapes[0] ?? [];
    out.push({
      planIndex: i,
      rule: 'fp8-cast',
      cost: { kind: 'memory', bytes: numel(a) * castBytesPerElement(recipe, dtypeBytes[dtype]) },
    });
  }
  if (linear && site.computes === 'dB' && kernels.gradAccumulationFusion)
    out.push({
      planIndex: i,
      rule: 'grad-accumulation',
      cost: gemmCost(op, precision, stateBytesPerParam[dtype].grads),
    });
  else out.push({ planIndex: i, rule: 'plan', cost: gemmCost(op, precision) });
  if (gpt && linear && site.computes === 'dB')
    out.push({
      planIndex: i,
      rule: 'gpt-bias',
      cost: { kind: 'memory', bytes: numel(op.inShapes[1] ?? []) * dtypeBytes[dtype] },
    });
}

function kernelRules(
  op: PlannedKernelOp,
  dtype: TrainDtype,
  gpt: boolean,
  flash: boolean,
  crossEntropy: CrossEntropyKernels,
  memory: (planIndex: number, rule: PricingRule, bytes: number) => void,
  dropoutBytes: (elems: number) => number,
  positionTableBytes: number,
): void {
  const i = op.index;
  const b = dtypeBytes[dtype];
  const elems = numel(op.outShape);
  const planned = (): void => memory(i, 'plan', kernelBytes(op, dtype));
  switch (op.kernel) {
    case 'softmax':
      if (flash) return;
      planned();
      if (gpt) memory(i, 'gpt-dropout', dropoutBytes(elems));
      return;
    case 'softmaxBackward':
      if (flash) return;
      if (gpt) memory(i, 'gpt-dropout', dropoutBytes(elems));
      planned();
      return;
    case 'rope':
    case 'ropeBackward':
      if (!gpt) planned();
      return;
    case 'swiglu':
      if (gpt) memory(i, 'gpt-gelu', 2 * elems * b);
      else planned();
      return;
    case 'swigluBackward':
      if (gpt) memory(i, 'gpt-gelu', 3 * elems * b);
      else planned();
      return;
    case 'rmsnorm':
    case 'rmsnormBackward':
      memory(i, gpt ? 'gpt-layernorm' : 'plan', kernelBytes(op, dtype));
      return;
    case 'rmsnormWeightGrad':
      memory(i, gpt ? 'gpt-layernorm' : 'plan', kernelBytes(op, dtype) + (gpt ? numel(op.inShapes[1] ?? []) * b : 0));
      return;
    case 'embedding':
      planned();
      if (gpt) {
        memory(i, 'gpt-position', positionTableBytes + 2 * elems * b);
        memory(i, 'gpt-dropout', dropoutBytes(elems));
      }
      return;
    case 'embeddingBackward':
      if (gpt) {
        memory(i, 'gpt-dropout', dropoutBytes(numel(op.inShapes[1] ?? [])));
        memory(i, 'gpt-position', numel(op.inShapes[1] ?? []) * b + positionTableBytes);
      }
      planned();
      return;
    case 'add':
      // The forward residual adds (the plan has no other forward add): bias-dropout-add.
      memory(i, gpt && op.phase === 'forward' ? 'gpt-dropout' : 'plan', kernelBytes(op, dtype) + (gpt ? elems : 0));
      return;
    case 'addInPlace':
      planned();
      if (gpt && op.phase === 'backward') memory(i, 'gpt-dropout', dropoutBytes(elems));
      return;
    case 'ceLocalMax':
    case 'ceLocalSumExp':
    case 'ceTargetLogit':
    case 'ceGrad':
      if (crossEntropy === 'plan') planned();
      else for (const bytes of crossEntropyPasses[crossEntropy](op, dtype)) memory(i, 'megatron-cross-entropy', bytes);
      return;
    case 'copyCols':
    case 'ceLoss':
      planned();
      return;
  }
}

/**
 * The kernels (bytes each) Megatron's vocab-parallel cross entropy runs for one plan op, after
 * megatron/core/tensor_parallel/cross_entropy.py (core_v0.19.0, the unfused default): the logits
 * [s, b, V/t] (E elements) are upcast to fp32 (`.float()`: read b, write 4 bytes per element;
 * no copy when training in fp32) and every later pass is an fp32 pass over all E:
 *   ceLocalMax      .float(); torch.max over the vocabulary (read 4)
 *   ceLocalSumExp   logits -= max in place (read 4, write 4); torch.exp in place (4 + 4); .sum (read 4);
 *                   exp_logits.div_(sum) in place (4 + 4) — the softmax kept for backward (it runs
 *                   after the sum's all-reduce; priced here, beside the exp it follows)
 *   ceTargetLogit   logits_2d[arange, target]: one fp32 logit and one id gathered per row (s·b rows)
 *   ceGrad          grad_input.mul_(grad_output) in place (4 + 4); the `.float()` cast's backward
 *                   back to the training dtype (read 4, write b)
 * 52 bytes per logit in 16 bits (40 in fp32, without the casts), where the plan's own kernels
 * read and write the logits in 16 bits a few times; the memory model already holds this fp32
 * softmax (memory-timeline.ts).
 */
function crossEntropyKernels(op: PlannedKernelOp, dtype: TrainDtype): number[] {
  const b = dtypeBytes[dtype];
  const f = 4;
  const logits = numel(op.inShapes[0] ?? []);
  const cast = b < f;
  switch (op.kernel) {
    case 'ceLocalMax':
      return [...(cast ? [logits * (b + f)] : []), logits * f + numel(op.outShape) * f];
    case 'ceLocalSumExp':
      return [2 * f * logits, 2 * f * logits, f * logits + numel(op.outShape) * f, 2 * f * logits];
    case 'ceTargetLogit':
      return [numel(op.outShape) * 3 * f];
    case 'ceGrad':
      return [2 * f * logits, ...(cast ? [logits * (f + b)] : [])];
    default:
      return [kernelBytes(op, dtype)];
  }
}

/**
 * The kernels (bytes each) of Megatron's fused vocab-parallel cross entropy for one plan op
 * (--cross-entropy-loss-fusion, cross_entropy_fusion_impl native: fused_cross_entropy.py,
 * core_v0.19.0), each `jit_fuser` function (torch.compile from torch 2.2, jit.py) taken as one pass
 * that reads its inputs and writes its outputs once over the E logits of [s, b, V/t]:
 *   ceLocalMax      calculate_logits_max (:12-20): the 16-bit logits read, the fp32 copy written
 *                   (an output: the later passes read it; in fp32 `.float()` is the tensor itself, read 4) and its
 *                   row max (read b, write 4)
 *   ceLocalSumExp   calculate_predicted_logits (:25-44): logits − max, exp in place, Σ exp
 *                   (read 4, write 4); calculate_cross_entropy_loss (:47-59): exp ÷ Σ, the softmax
 *                   kept for backward (read 4, write 4)
 *   ceTargetLogit   the target logit gathered per row, as unfused (3·4 bytes per row)
 *   ceGrad          calculate_gradients (:64-83): softmax read, the target's −1 scattered, × the
 *                   loss gradient, `.to(torch.bfloat16)` written (:82; read 4, write 2)
 * 28 bytes per logit in bf16 against the unfused 52 (crossEntropyKernels). Its memory is the
 * unfused path's (the same fp32 softmax, mask and targets saved: :119). The one all-reduce of
 * the predicted logits and Σ exp in place of two (:112-114) is not priced apart.
 */
function fusedCrossEntropyKernels(op: PlannedKernelOp, dtype: TrainDtype): number[] {
  const b = dtypeBytes[dtype];
  const f = 4;
  const logits = numel(op.inShapes[0] ?? []);
  switch (op.kernel) {
    case 'ceLocalMax':
      return [logits * (b < f ? b + f : f) + numel(op.outShape) * f];
    case 'ceLocalSumExp':
      return [2 * f * logits + numel(op.outShape) * f, 2 * f * logits];
    case 'ceTargetLogit':
      return [numel(op.outShape) * 3 * f];
    case 'ceGrad':
      return [logits * (f + 2)];
    default:
      return [kernelBytes(op, dtype)];
  }
}

/**
 * The kernels (bytes each) of Transformer Engine's parallel cross entropy for one plan op
 * (--cross-entropy-loss-fusion --cross-entropy-fusion-impl te: te_parallel_cross_entropy,
 * megatron/core/extensions/transformer_engine.py:3490-3504, core_v0.19.0; Transformer Engine v2.18's
 * Triton kernels, transformer_engine/common/triton/cross_entropy.py, and their wrappers,
 * transformer_engine/pytorch/triton/cross_entropy.py). The logits [s, b, V/t] (E elements) are read
 * in their own dtype and upcast in registers; no fp32 copy is written:
 *   ceLocalMax      online_softmax_kernel (:11-82): one read of the logits (b), the row's running max m,
 *                   Σ exp d and target logit X_y written (3·4 bytes per row; the target read there)
 *   ceLocalSumExp   cross_entropy_kernel (:85-228), after the all-gather of m, d, X_y (wrapper
 *                   :81-87): the logits read again (b), softmax − one-hot written as the fp32 input
 *                   gradient (4, :180-194, :215-226), the row's statistics read and its loss written
 *                   (12 + 4 per row; the other ranks' t − 1 gathered rows not counted)
 *   ceTargetLogit   none: X_y is read inside online_softmax_kernel
 *   ceGrad          element_mul_kernel (:231-266) scales the saved fp32 gradient in place by the
 *                   per-token loss gradient (4 + 4; skipped only for a scalar 1.0, wrapper :124-129,
 *                   and Megatron's loss is per token, reduce_loss False); autograd casts it to the
 *                   16-bit logits' dtype (read 4, write b; none in fp32)
 * 22 bytes per logit in bf16 (20 in fp32) against the native fused 28 and the unfused 52. Its memory
 * is theirs: the fp32 gradient saved from forward to backward (pytorch/cross_entropy.py:62) in place
 * of the fp32 softmax, the 16-bit logits beside it in the forward and the 16-bit gradient beside it
 * after the cast (stage-model.ts).
 */
function teCrossEntropyKernels(op: PlannedKernelOp, dtype: TrainDtype): number[] {
  const b = dtypeBytes[dtype];
  const f = 4;
  const logits = numel(op.inShapes[0] ?? []);
  const rows = numel(op.outShape);
  switch (op.kernel) {
    case 'ceLocalMax':
      return [logits * b + 3 * f * rows];
    case 'ceLocalSumExp':
      return [logits * (b + f) + (3 * f + f) * rows];
    case 'ceTargetLogit':
      return [];
    case 'ceGrad':
      return [2 * f * logits, ...(b < f ? [logits * (f + b)] : [])];
    default:
      return [kernelBytes(op, dtype)];
  }
}

/** The kernels each Megatron cross-entropy path runs for one plan op (the plan's own are priced as planned). */
const crossEntropyPasses: Readonly<
  Record<Exclude<CrossEntropyKernels, 'plan'>, (op: PlannedKernelOp, dtype: TrainDtype) => number[]>
> = {
  megatron: crossEntropyKernels,
  'megatron-fused': fusedCrossEntropyKernels,
  'te-fused': teCrossEntropyKernels,
};

/** The plan's GEMM in `precision`; with `accumulateBytes`, accumulating into C of that format. */
const gemmCost = (op: PlannedGemmOp, precision: GemmPrecision, accumulateBytes?: number): PricedCost => ({
  kind: 'gemm',
  shape: accumulateBytes === undefined ? op.gemm : { ...op.gemm, accumulateBytes },
  precision,
  flops: op.gemm.flops,
});

/**
 * FLOPs of the priced ops (one rank): `gemm` the GEMMs the job runs (GPT: no gate GEMMs;
 * flash: the attention GEMMs are inside `attention`), `attention` FlashAttention's executed
 * FLOPs (causal blocks skipped), `modelAttention` the attention GEMMs as a model-FLOPs count
 * has them (Q·Kᵀ and P·V over the full s × s, forward and backward, whatever the backend).
 */
export function pricedFlops(
  plan: LayerPlan,
  priced: readonly PricedOp[],
): { gemm: number; attention: number; modelAttention: number } {
  let gemm = 0;
  let attention = 0;
  for (const p of priced) {
    if (p.cost.kind === 'gemm') gemm += p.cost.flops;
    if (p.cost.kind === 'flash') attention += p.cost.flops;
  }
  let modelAttention = 0;
  for (const op of plan.ops)
    if (op.kind === 'gemm' && (op.gemm.site.product === 'scores' || op.gemm.site.product === 'context'))
      modelAttention += op.gemm.flops;
  return { gemm, attention, modelAttention };
}

/**
 * Model FLOPs of one rank's plan under `kernels` (forward + backward): the linear GEMMs the
 * architecture has (GPT: no gate) plus the attention GEMMs over the full s × s — the count a
 * model-FLOPs MFU divides by, the same for flash and unfused attention.
 */
export function modelGemmFlops(plan: LayerPlan, dtype: TrainDtype, kernels: KernelOptions): number {
  const f = pricedFlops(plan, pricedOps(plan, dtype, { ...kernels, attentionBackend: 'unfused' }));
  return f.gemm;
}
