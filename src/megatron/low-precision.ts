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
const capability: Readonly<Record<GpuArch, number>> = { volta: 7.0, ampere: 8.0, hopper: 9.0, blackwell: 10.0 };

/**
 * Why a GPU of generation `arch` cannot run `recipe` (undefined: it can), in Transformer Engine's
 * words (quantization.py, TE v2.9): delayed and tensorwise need compute capability ≥ 8.9 (:47-58);
 * blockwise ≥ 9.0 with CUDA ≥ 12.9 (:79-86); mxfp8 ≥ 10.0 and < 12.0 (:61-67); nvfp4 ≥ 10.0 (:71-75).
 */
export function lowPrecisionRefusal(recipe: Fp8Recipe | 'nvfp4', arch: GpuArch): string | undefined {
  const cc = capability[arch];
  const Q = 'transformer_engine/pytorch/quantization.py';
  if ((recipe === 'delayed' || recipe === 'tensorwise') && cc < 8.9)
    return `Device compute capability 8.9 or higher required for FP8 execution (Transformer Engine ${Q}:47-58).`;
  if (recipe === 'blockwise' && cc < 9.0)
    return `FP8 block scaled GEMM requires compute capability 9.0 or higher and CUDA >= 12.9 (Transformer Engine ${Q}:79-86).`;
  if (recipe === 'mxfp8' && cc < 10.0)
    return `Device compute capability 10.0 or higher required for MXFP8 execution (Transformer Engine ${Q}:61-67).`;
  if (recipe === 'nvfp4' && cc < 10.0)
    return `Device compute capability 10.0 or higher required for NVFP4 execution (Transformer Engine ${Q}:71-75).`;
  return undefined;
}
