// Megatron-Core's --recompute-modules (transformer_config.py:546-562, core_v0.19.0): which submodules
// selective recomputation runs again in backward, and the rules the config refuses them by.
import { parseModuleList } from './module-list.ts';
import type { Fp8Recipe } from './low-precision.ts';
import type { MoeSetup } from './moe.ts';

/** --recompute-modules choices of the tag (transformer_config.py:1768-1777), less gdn_norm_out (no GatedDeltaNet here). */
export const recomputeModuleNames = [
  'core_attn',
  'mlp',
  'layernorm',
  'moe_act',
  'moe',
  'shared_experts',
  'mla_up_proj',
] as const;
/** One recomputable submodule. */
export type RecomputeModule = (typeof recomputeModuleNames)[number];

/** The default of --recompute-modules: core attention alone (transformer_config.py:1763-1764). */
export const defaultRecomputeModules: readonly RecomputeModule[] = ['core_attn'];

/** Parses a --recompute-modules list ("core_attn mlp" or "core_attn,mlp"), naming an unknown module and the choices. */
export const parseRecomputeModules = (text: string): RecomputeModule[] =>
  parseModuleList(
    '--recompute-modules',
    text,
    recomputeModuleNames,
    'transformer_config.py:1778-1782',
    `--recompute-modules needs one or more of ${recomputeModuleNames.join(', ')}.`,
  );

/**
 * Megatron's refusals of a module list (transformer_config.py, core_v0.19.0), each with its line:
 * moe_act needs --moe-grouped-gemm (:1784-1787); mla_up_proj needs --multi-latent-attention
 * (:1789-1793); shared_experts cannot go with --moe-shared-expert-overlap (:1812-1818); with fp8
 * (`fp8Recipe`: the job's --fp8-recipe, absent without --fp8-format) moe_act and layernorm cannot
 * go with delayed scaling (:1821-1827).
 */
export function recomputeModuleRefusals(
  modules: readonly RecomputeModule[],
  job: {
    readonly moe?: Pick<MoeSetup, 'groupedGemm' | 'sharedFfn' | 'sharedExpertOverlap'>;
    readonly mla: boolean;
    readonly fp8Recipe?: Fp8Recipe;
  },
): { source: string; message: string }[] {
  const T = 'megatron/core/transformer/transformer_config.py';
  const out: { source: string; message: string }[] = [];
  if (modules.includes('moe_act') && !job.moe?.groupedGemm)
    out.push({
      source: `${T}:1784-1787`,
      message: 'moe_act in recompute_modules is only supported with moe_grouped_gemm.',
    });
  if (modules.includes('mla_up_proj') && !job.mla)
    out.push({
      source: `${T}:1789-1793`,
      message: 'mla_up_proj in recompute_modules is only supported with multi_latent_attention.',
    });
  if (modules.includes('shared_experts') && job.moe?.sharedFfn !== undefined && job.moe.sharedExpertOverlap)
    out.push({
      source: `${T}:1812-1818`,
      message: 'shared_experts recompute cannot work with --moe-shared-expert-overlap.',
    });
  const fp8 = fp8RecomputeRefusal(modules, job.fp8Recipe);
  if (fp8) out.push(fp8);
  return out;
}

/** transformer_config.py:1821-1827: with fp8 under delayed scaling, moe_act and layernorm cannot be recomputed. */
export function fp8RecomputeRefusal(
  modules: readonly RecomputeModule[],
  fp8Recipe: Fp8Recipe | undefined,
): { source: string; message: string } | undefined {
  if (fp8Recipe !== 'delayed' || !(modules.includes('moe_act') || modules.includes('layernorm'))) return undefined;
  return {
    source: 'megatron/core/transformer/transformer_config.py:1821-1827',
    message:
      'Delayed scaling does not support moe_act and layernorm recompute for fp8 (give --fp8-recipe tensorwise, blockwise or mxfp8).',
  };
}
