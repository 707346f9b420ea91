// Megatron-Core's fp8 and fp4 recipes (transformer_config.py:566-672, core_v0.19.0; enums.py
// Fp8Recipe, Fp4Recipe) and the GPUs Transformer Engine runs each on (TE v2.9,
// transformer_engine/pytorch/quantization.py:47-86, check_recipe_support :89-106).
import type { GpuArch } from '../hardware/gpus.ts';

/** --fp8-recipe choices the projection prices (enums.py Fp8Recipe, less custom: it needs a quantizer factory). */
export const fp8Recipes = ['delayed', 'tensorwise', 'blockwise', 'mxfp8'] as const;
/** Transformer Engine's fp8 scaling recipe: per-tensor delayed or current scaling, 128-element blocks, or MX 32-element blocks. */
export type Fp8Recipe = (typeof fp8Recipes)[number];
/** Megatron's default --fp8-recipe (transformer_config.py:573-575). */
export const defaultFp8Recipe: Fp8Recipe = 'delayed';

/** --fp4-format choices (transformer_config.py:652-654): e2m1, with --fp4-recipe nvfp4 (its default, :658). */
export const fp4Formats = ['none', 'e2m1'] as const;
export type Fp4Format = (typeof fp4Formats)[number];

/** The CUDA compute capability of a GPU generation here (V100 7.0, A100 8.0, H100/H200 9.0, B200/GB200 10.0). */
export const computeCapabilityOf: Readonly<Record<GpuArch, number>> = {
  volta: 7.0,
  ampere: 8.0,
  hopper: 9.0,
  blackwell: 10.0,
};

/**
 * Why a GPU of compute capability `cc` (major.minor) cannot run `recipe` (undefined: it can), in Transformer Engine's
 * words (quantization.py, TE v2.9): delayed and tensorwise need compute capability ≥ 8.9 (:47-58);
 * blockwise ≥ 9.0 with CUDA ≥ 12.9 (:79-86); mxfp8 ≥ 10.0 and < 12.0 (:61-67); nvfp4 ≥ 10.0 (:71-75).
 */
export function lowPrecisionRefusal(recipe: LinearRecipe, cc: number): string | undefined {
  const Q = 'transformer_engine/pytorch/quantization.py';
  if ((recipe === 'delayed' || recipe === 'tensorwise') && cc < 8.9)
    return `Device compute capability 8.9 or higher required for FP8 execution (Transformer Engine ${Q}:47-58): choose a Hopper or Blackwell system.`;
  if (recipe === 'blockwise' && cc < 9.0)
    return `FP8 block scaled GEMM requires compute capability 9.0 or higher and CUDA >= 12.9 (Transformer Engine ${Q}:79-86): choose a Hopper or Blackwell system.`;
  if (recipe === 'mxfp8' && cc < 10.0)
    return `Device compute capability 10.0 or higher required for MXFP8 execution (Transformer Engine ${Q}:61-67): choose a Blackwell system (B200, GB200) or --fp8-recipe blockwise, tensorwise or delayed.`;
  if (recipe === 'nvfp4' && cc < 10.0)
    return `Device compute capability 10.0 or higher required for NVFP4 execution (Transformer Engine ${Q}:71-75): choose a Blackwell system (B200, GB200) or --fp8-format.`;
  return undefined;
}

/** A low-precision GEMM recipe of Transformer Engine's linear layers: an fp8 recipe, or NVFP4. */
export type LinearRecipe = Fp8Recipe | 'nvfp4';

/**
 * HBM bytes per element of one quantization of a 16-bit activation or gradient operand (`src`
 * bytes each) into what the GEMMs of its forward and backward read — the row-major copy and the
 * transposed (columnwise) one — with their scales (TE v2.9,
 * transformer_engine/common/recipe/__init__.py and pytorch/csrc/quantizer.cpp):
 * - delayed (DelayedScaling, :121): the scale is last step's amax history; one fused cast-transpose
 *   with amax reads src and writes 1 + 1: src + 2.
 * - tensorwise (Float8CurrentScaling, :224): the amax of this tensor first (quantizer.cpp:518,
 *   nvte_compute_amax), then the cast (:535): 2·src + 2.
 * - blockwise (Float8BlockScaling, :306; 1×128 blocks for activations and gradients): one read,
 *   both copies and an fp32 scale per 128 elements each way: src + 2 + 2·4/128.
 * - mxfp8 (MXFP8BlockScaling, :265): 32-element blocks, an E8M0 scale (1 byte) each way:
 *   src + 2 + 2/32.
 * - nvfp4 (NVFP4BlockScaling, :387): the per-tensor amax first (quantizer.cpp:1481-1508, after the
 *   random Hadamard transform for inputs and gradients), then the rowwise cast and the columnwise
 *   one with the Hadamard transform (each reads the input where the fused path does not apply,
 *   :1545-1612): 3·src + ½ + ½ + an E4M3 scale per 16 elements each way (2/16).
 */
export function castBytesPerElement(recipe: LinearRecipe, src: number): number {
  switch (recipe) {
    case 'delayed':
      return src + 2;
    case 'tensorwise':
      return 2 * src + 2;
    case 'blockwise':
      return src + 2 + (2 * 4) / 128;
    case 'mxfp8':
      return src + 2 + 2 / 32;
    case 'nvfp4':
      return 3 * src + 1 + 2 / 16;
  }
}

/**
 * Bytes per linear-layer parameter of its quantized copies, held from the first micro-batch's
 * forward to the optimizer step (Transformer Engine casts each weight once per step,
 * `is_first_microbatch`, and keeps the copy and its transpose for the dgrad): fp8 rowwise and
 * columnwise, 1 + 1, with their scales — none per tensor for delayed and tensorwise; blockwise's
 * 128×128 weight blocks (Float8BlockScaling w_block_scaling_dim 2) an fp32 scale each way, 2·4/128²;
 * mxfp8 an E8M0 byte per 32 each way, 2/32; nvfp4 ½ + ½ with an E4M3 byte per 16×16 block each
 * way, 2/256. With --fp8-param-gather (`fp8_param`, transformer_config.py:581-586) these copies are
 * the parameters themselves: the 16-bit model weight (2 bytes) is not kept.
 */
export function weightCopyBytes(recipe: LinearRecipe): number {
  switch (recipe) {
    case 'delayed':
    case 'tensorwise':
      return 2;
    case 'blockwise':
      return 2 + (2 * 4) / (128 * 128);
    case 'mxfp8':
      return 2 + 2 / 32;
    case 'nvfp4':
      return 1 + 2 / 256;
  }
}

/**
 * Megatron's refusals of --fp8-param-gather: it needs --fp8-format (transformer_config.py:1439-1440),
 * the distributed optimizer or FSDP (arguments.py:1060-1062), and under --optimizer-cpu-offload the
 * delayed recipe (arguments.py:1808-1810). With FSDP it is refused as not priced here (the
 * quantized shards and gathered units are not modelled; Megatron turns it off with
 * --use-torch-fsdp2 under Transformer Engine 2.x, arguments.py:1017-1022).
 */
export function fp8ParamGatherRefusals(job: {
  readonly fp8Recipe?: Fp8Recipe;
  readonly shardedOptimizer: boolean;
  readonly fsdp: boolean;
  readonly optimizerCpuOffload: boolean;
}): string[] {
  const out: string[] = [];
  if (job.fsdp)
    out.push(
      '--fp8-param-gather with FSDP is not priced yet (its fp8 shards and gathered units): project it with --use-distributed-optimizer.',
    );
  if (job.fp8Recipe === undefined)
    out.push(
      'fp8_param must be used together with fp8 mode (megatron/core/transformer/transformer_config.py:1439-1440): give --fp8-format with --fp8-param-gather.',
    );
  if (!job.shardedOptimizer)
    out.push(
      '--fp8-param-gather only supported with distributed optimizer, torch fsdp2, megatron fsdp, or inference mode (megatron/training/arguments.py:1060-1062).',
    );
  if (job.optimizerCpuOffload && job.fp8Recipe !== undefined && job.fp8Recipe !== 'delayed')
    out.push(
      'When `--fp8-param-gather` is enabled, the optimizer cpu offload must be used in conjunction with `--fp8-recipe delayed` (megatron/training/arguments.py:1808-1810).',
    );
  return out;
}

/**
 * Bytes per element of a quantized parameter in the distributed optimizer's parameter all-gather
 * (--fp8-param-gather, --fp4-param-gather; core_v0.19.0 megatron/core/distributed/param_and_grad_buffer.py):
 * a quantized parameter's buffer is uint8 (:914-916, group_params_for_buffers), so fp8 data moves
 * 1 byte per element (delayed, tensorwise, blockwise: the rowwise data only, TE's replace_raw_data
 * maps `_data` or `_rowwise_data` into it); NVFP4 packs two values per byte (the packed layout,
 * :1093-1120, :1176): ½. MXFP8 parameters cannot be mapped into that buffer (Transformer Engine's
 * replace_raw_data raises for MXFP8Tensor), so the buffer of a bucket holding them is the gradient
 * buffer viewed as bf16 (:1153-1171) and the gather moves 2 bytes, re-quantized after it
 * (_post_param_sync → copy_tensor_to_quantized_param, :301-329, fp8_utils.py:193-226). No scale
 * travels beside the data: each rank derives the scales from amaxes all-reduced before the cast
 * (amaxReduceBytesPerElement).
 */
export function quantizedGatherBytes(recipe: LinearRecipe): number {
  switch (recipe) {
    case 'delayed':
    case 'tensorwise':
    case 'blockwise':
      return 1;
    case 'mxfp8':
      return 2;
    case 'nvfp4':
      return 0.5;
  }
}

/**
 * fp32 amax bytes per parameter element all-reduced (MAX) over the data-parallel group when the
 * optimizer casts its fp32 master shards into the quantized parameters, once per step (Transformer
 * Engine v2.17.1, the version core_v0.19.0's uv.lock pins, transformer_engine/pytorch/tensor/utils.py;
 * Megatron's quantize_param_shard, fp8_utils.py:634-641, and quantize_nvfp4_param_shard,
 * fp4_utils.py:135-173): delayed and tensorwise one fp32 per weight tensor (:273-282, :324-365),
 * taken as 0 per element (the collective's latency remains); blockwise one per 128×128 block
 * (:438-528): 4/128²; mxfp8 one per 1×32 block rowwise and one per 32×1 block columnwise
 * (:836-883): 2·4/32; nvfp4 one per 16×16 block (:596-674, and one global amax per tensor): 4/16².
 */
export function amaxReduceBytesPerElement(recipe: LinearRecipe): number {
  switch (recipe) {
    case 'delayed':
    case 'tensorwise':
      return 0;
    case 'blockwise':
      return 4 / (128 * 128);
    case 'mxfp8':
      return (2 * 4) / 32;
    case 'nvfp4':
      return 4 / (16 * 16);
  }
}

/** Whether the recipe's cast reads its source once more for a per-tensor amax of this tensor first (tensorwise; NVFP4's global amax). */
const amaxPass = (recipe: LinearRecipe): boolean => recipe === 'tensorwise' || recipe === 'nvfp4';

/**
 * HBM bytes per weight element of Transformer Engine's weight cast from the 16-bit parameter
 * (`src` bytes) into its quantized copies (weightCopyBytes), done once per step: Megatron's TE
 * linear layers pass is_first_microbatch (core_v0.19.0 megatron/core/extensions/transformer_engine.py
 * :1082-1089 TELinear, :1330-1338 TELayerNormColumnParallelLinear, :2424-2431 TEGroupedLinear; set
 * by schedules.py:490-491) and TE caches the copies for the later micro-batches. Reads src (twice
 * where the recipe takes this tensor's amax first, amaxPass) and writes the copies with their
 * scales: delayed 2 + 2 = 4, tensorwise 2·2 + 2 = 6, blockwise 2 + 2 + 2·4/128², mxfp8 2 + 2 + 2/32,
 * nvfp4 2·2 + 1 + 2/256 (bf16 source).
 */
export const weightCastBytes = (recipe: LinearRecipe, src: number): number =>
  (amaxPass(recipe) ? 2 : 1) * src + weightCopyBytes(recipe);

/**
 * HBM bytes per weight element, per step, of keeping the parameters quantized (--fp8-param-gather,
 * --fp4-param-gather), in two parts:
 * - `shard`, on the 1/d of each weight this rank's optimizer owns, after the optimizer step:
 *   Transformer Engine's master cast (utils.py, v2.17.1) reads the fp32 master (4), writes it in
 *   the model dtype (src, `master_weight.to(model_weight.dtype)`, :144), reads that once for the partial
 *   amax where the recipe takes one (all but delayed) and once for the cast, and writes the rowwise
 *   quantized shard (quantizedGatherBytes): 4 + src + src + q, + src with the amax pass. MXFP8 in
 *   Megatron's DDP buffers instead copies the fp32 master shard into the bf16 buffer (distrib_optimizer.py
 *   _copy_main_params_to_param_buffer, :2894-2925): 4 + src.
 * - `full`, on the whole weight after the all-gather: the columnwise (transposed) copy made from
 *   the gathered rowwise data (Megatron's post_all_gather_processing, fp8_utils.py:649-670 → TE
 *   utils.py:936; delayed scaling's transpose in the first forward): read q, write
 *   weightCopyBytes − q, weightCopyBytes in all. MXFP8: the gathered bf16
 *   weight re-quantized into both copies (copy_tensor_to_quantized_param): weightCastBytes.
 */
export function quantizedParamCastBytes(recipe: LinearRecipe, src: number): { shard: number; full: number } {
  if (recipe === 'mxfp8') return { shard: 4 + src, full: weightCastBytes(recipe, src) };
  const q = quantizedGatherBytes(recipe);
  return {
    shard: 4 + src + (recipe === 'delayed' ? 0 : src) + src + q,
    full: weightCopyBytes(recipe),
  };
}

/**
 * Megatron's refusals of --fp4-param-gather: it needs --fp4-format (arguments.py:1069-1070,
 * transformer_config.py:1451-1452). Without the distributed optimizer or with FSDP it is refused as
 * not priced (Megatron asserts nothing there; the non-distributed optimizer holds no quantized-shard
 * path at the tag and Megatron-FSDP's NVFP4 units are not modelled).
 */
export function fp4ParamGatherRefusals(job: {
  readonly fp4: boolean;
  readonly distributedOptimizer: boolean;
  readonly fsdp: boolean;
}): string[] {
  const out: string[] = [];
  if (!job.fp4)
    out.push(
      '--fp4-param-gather must be used together with --fp4-format (megatron/training/arguments.py:1069-1070): give --fp4-format e2m1.',
    );
  if (job.fsdp)
    out.push(
      '--fp4-param-gather with FSDP is not priced yet (its NVFP4 shards and gathered units): project it with --use-distributed-optimizer.',
    );
  else if (!job.distributedOptimizer)
    out.push(
      '--fp4-param-gather without the distributed optimizer is not priced (there is no parameter all-gather to make fp4): add --use-distributed-optimizer.',
    );
  return out;
}
