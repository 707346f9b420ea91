import { quoted } from '../../core/quote.ts';
import type { GpuArch } from '../../hardware/gpus.ts';
import type { LayerArch } from '../../megatron/layer-arch.ts';
import type { CudaGraphModule } from '../../megatron/cuda-graph-rules.ts';
import type { GemmPrecision } from '../../hardware/gpus.ts';
import type { TrainDtype } from '../../hardware/dtype.ts';
import {
  computeCapabilityOf,
  defaultFp8Recipe,
  lowPrecisionRefusal,
  type Fp4Format,
  type Fp8Recipe,
  type LinearRecipe,
} from '../../megatron/low-precision.ts';

/**
 * How the projected cluster runs its kernels: the switches a Megatron launch line sets that
 * change kernel time but not the playground's layer (which is always the Llama-style plan of
 * src/parallel/plan.ts, run eagerly with materialized attention). Spelled as Megatron-LM
 * core_v0.19.0 spells them (megatron/training/arguments.py and the config dataclasses it
 * exposes):
 *   attentionBackend  --attention-backend auto|flash|fused|unfused (AttnBackend; the default is
 *                     Megatron's `auto`, transformer_config.py:144, resolved per GPU by
 *                     attentionKernelOf): flash and fused (cuDNN) are priced as FlashAttention,
 *                     unfused materializes the s×s scores.
 *   layerArch         llama: --swiglu --normalization RMSNorm --position-embedding-type rope
 *                     --disable-bias-linear, no dropout (the plan as it is); gpt: Megatron's
 *                     defaults, GeLU MLP of two GEMMs, LayerNorm, learned_absolute positions,
 *                     biases, hidden and attention dropout 0.1 (priced-ops.ts).
 *   fp8               --fp8-format hybrid|e4m3 (Transformer Engine's fp8 recipe), or none.
 *   cudaGraphImpl     --cuda-graph-impl none|local|transformer_engine|full_iteration
 *                     (--enable-cuda-graph is the deprecated spelling of local).
 *   tpCommOverlap     --tp-comm-overlap: TP all-gathers and reduce-scatters split into chunks
 *                     under the GEMMs (Transformer Engine userbuffers; Megatron asserts
 *                     --sequence-parallel with it).
 * The defaults are the projection's behaviour before these switches existed.
 */
export interface KernelOptions {
  readonly attentionBackend: AttentionBackend;
  readonly layerArch: LayerArch;
  readonly fp8: Fp8Format;
  /** --fp8-recipe with --fp8-format (low-precision.ts; absent: Megatron's default, delayed). */
  readonly fp8Recipe?: Fp8Recipe;
  /** --fp4-format e2m1 (--fp4-recipe nvfp4, its only priced recipe): the linear layers' GEMMs in NVFP4 (absent: none). */
  readonly fp4?: Fp4Format;
  readonly cudaGraphImpl: CudaGraphImpl;
  /** --cuda-graph-modules (cuda-graph-rules.ts; absent or empty: the whole layer, the only scope priced). */
  readonly cudaGraphModules?: readonly CudaGraphModule[];
  readonly tpCommOverlap: boolean;
  /**
   * The vocab-parallel cross entropy's kernels: absent or `plan`, the playground's own (the logits
   * read in 16 bits); `megatron`, Megatron's unfused default (--cross-entropy-loss-fusion off:
   * the logits upcast to fp32, each pass over them in fp32; priced-ops.ts crossEntropyKernels);
   * `megatron-fused`, --cross-entropy-loss-fusion with its default native impl (fused_cross_entropy.py:
   * each jit_fuser function one pass; priced-ops.ts fusedCrossEntropyKernels); `te-fused`, with
   * --cross-entropy-fusion-impl te (Transformer Engine's Triton kernels: priced-ops.ts
   * teCrossEntropyKernels), which Megatron-LM's training refuses at core_v0.19.0 (arguments.py:1642-1647).
   */
  readonly crossEntropy?: CrossEntropyKernels;
  /**
   * Megatron's gradient accumulation fusion (on in its training unless
   * --no-gradient-accumulation-fusion: arguments.py, core_v0.19.0; Transformer Engine's
   * fuse_wgrad_accumulation): each linear layer's wgrad GEMM adds its product into the main_grad
   * buffer (fp32 for bf16 training, the gradients' format otherwise: training-memory.ts), reading
   * and writing it, where the plan's wgrad writes a fresh 16-bit gradient. Absent or false: the plan's.
   */
  readonly gradAccumulationFusion?: boolean;
}

/** The cross-entropy pricings (`CrossEntropyKernels`). */
export const crossEntropyKernelChoices = ['plan', 'megatron', 'megatron-fused', 'te-fused'] as const;
/** Whose cross-entropy kernels are priced: the plan's, Megatron's unfused fp32 passes, its native fused ones or Transformer Engine's. */
export type CrossEntropyKernels = (typeof crossEntropyKernelChoices)[number];

/** --attention-backend values the projection prices. */
export const attentionBackends = ['auto', 'unfused', 'flash', 'fused'] as const;
/** Megatron's attention backend: auto (Transformer Engine picks), FlashAttention, cuDNN fused attention, or unfused (s×s scores in HBM). */
export type AttentionBackend = (typeof attentionBackends)[number];
/** The kernel an attention backend runs on a GPU. */
export type AttentionKernelChoice = Exclude<AttentionBackend, 'auto'>;

/**
 * The kernel `k`'s attention runs on a GPU of generation `arch`: as given, or for `auto`
 * (Megatron's default) what Transformer Engine picks: cuDNN's fused attention on Hopper and newer
 * (its get_attention_backend: "Disabling FlashAttention to give FusedAttention preference on
 * Hopper+"), FlashAttention on Ampere, and on Volta, where Transformer Engine cannot run (its CUDA 13
 * builds start at sm_75), the local spec's unfused DotProductAttention.
 */
export function attentionKernelOf(k: Pick<KernelOptions, 'attentionBackend'>, arch: GpuArch): AttentionKernelChoice {
  if (k.attentionBackend !== 'auto') return k.attentionBackend;
  return arch === 'volta' ? 'unfused' : arch === 'ampere' ? 'flash' : 'fused';
}

/** `k` with its attention backend resolved for `arch` (attentionKernelOf). */
export const resolveKernels = (k: KernelOptions, arch: GpuArch): KernelOptions =>
  k.attentionBackend === 'auto' ? { ...k, attentionBackend: attentionKernelOf(k, arch) } : k;

/** --fp8-format values, and none. */
export const fp8Formats = ['none', 'hybrid', 'e4m3'] as const;
/** Transformer Engine's fp8 format (hybrid: e4m3 forward, e5m2 gradients), or none. */
export type Fp8Format = (typeof fp8Formats)[number];

/** The fp8 recipe `k` runs (undefined without --fp8-format). */
export const fp8RecipeOf = (k: Pick<KernelOptions, 'fp8' | 'fp8Recipe'>): Fp8Recipe | undefined =>
  k.fp8 === 'none' ? undefined : (k.fp8Recipe ?? defaultFp8Recipe);

/** The recipe of the linear layers' low-precision GEMMs under `k` (undefined: they run in the training dtype). */
export const linearRecipeOf = (k: Pick<KernelOptions, 'fp8' | 'fp8Recipe' | 'fp4'>): LinearRecipe | undefined =>
  k.fp4 === 'e2m1' ? 'nvfp4' : fp8RecipeOf(k);

/** The format the linear layers' GEMMs run in: fp4 under NVFP4, fp8 under an fp8 recipe, else the training dtype. */
export const linearPrecisionOf = (k: Pick<KernelOptions, 'fp8' | 'fp4'>, dtype: TrainDtype): GemmPrecision =>
  k.fp4 === 'e2m1' ? 'fp4' : k.fp8 !== 'none' ? 'fp8' : dtype;

/**
 * Megatron's and Transformer Engine's refusals of `k`'s low-precision flags on a GPU of generation
 * `arch`, with the reason: --fp4-format with --fp8-format (arguments.py:1065-1066), and a recipe the
 * GPU cannot run (low-precision.ts lowPrecisionRefusal).
 */
export function lowPrecisionRefusals(k: KernelOptions, arch: GpuArch): string[] {
  const out: string[] = [];
  if (k.fp4 === 'e2m1' && k.fp8 !== 'none')
    out.push(
      '--fp4-format and --fp8-format cannot be used simultaneously. Please choose one. (megatron/training/arguments.py:1065-1066)',
    );
  const recipe = linearRecipeOf(k);
  const why = recipe && lowPrecisionRefusal(recipe, computeCapabilityOf[arch]);
  if (why) out.push(`${recipe === 'nvfp4' ? '--fp4-format e2m1' : `--fp8-recipe ${recipe}`}: ${why}`);
  return out;
}

/** --cuda-graph-impl values. */
export const cudaGraphImpls = ['none', 'local', 'transformer_engine', 'full_iteration'] as const;
/** Megatron's CUDA graph implementation; none is eager. */
export type CudaGraphImpl = (typeof cudaGraphImpls)[number];

/** Megatron's defaults: auto attention, the Llama layer, bf16/fp16 GEMMs, eager, no TP comm overlap. */
export const defaultKernelOptions: KernelOptions = {
  attentionBackend: 'auto',
  layerArch: 'llama',
  fp8: 'none',
  cudaGraphImpl: 'none',
  tpCommOverlap: false,
};

/** Whether kernels run inside CUDA graphs (no host dispatch per kernel). */
export const usesCudaGraphs = (k: KernelOptions): boolean => k.cudaGraphImpl !== 'none';

/** Whether attention runs as one fused FlashAttention-style kernel per pass on a GPU of generation `arch`. */
export const usesFlashAttention = (k: Pick<KernelOptions, 'attentionBackend'>, arch: GpuArch): boolean =>
  attentionKernelOf(k, arch) !== 'unfused';

/** `text` as one of `values`, or an error naming the flag and the accepted values. */
export function parseChoice<T extends string>(flag: string, text: string, values: readonly T[]): T {
  if ((values as readonly string[]).includes(text)) return text as T;
  throw new Error(`${flag} ${quoted(text)}: use ${values.join(', ')}.`);
}
