// Megatron-Core's --fine-grained-activation-offloading (transformer_config.py:1229-1265 and its
// rules :1848-1903, core_v0.19.0; docs/user-guide/features/fine_grained_activation_offloading.md):
// each listed submodule's input goes to the host in forward and comes back before its backward.
import { parseModuleList } from './module-list.ts';
import type { RecomputeModule } from './recompute-modules.ts';

/** --offload-modules choices (transformer_config.py:1234-1246). */
export const offloadModuleNames = [
  'attn_norm',
  'qkv_linear',
  'core_attn',
  'attn_proj',
  'mlp_norm',
  'expert_fc1',
  'moe_act',
  'fused_group_mlp',
] as const;
/** One submodule whose input is offloaded. */
export type OffloadModule = (typeof offloadModuleNames)[number];

/** --fine-grained-activation-offloading with its modules and tuning flags. */
export interface ActivationOffload {
  readonly modules: readonly OffloadModule[];
  /** --activation-offload-fraction (default 1.0, :1262): the share of eligible offload groups offloaded, first in forward order. */
  readonly fraction: number;
  /** --min-offloaded-tensor-size (default 1,048,576 elements, :1247): smaller tensors stay on the GPU. */
  readonly minTensorElements: number;
  /**
   * --delta-offload-bytes-across-pp-ranks Δ (default 0, :1256): pipeline rank i keeps i·Δ bytes of
   * its offload groups on the GPU (fine_grained_activation_offload.py:597-607).
   */
  readonly deltaBytesPerPpRank: number;
}

/** Megatron's defaults of the tuning flags (transformer_config.py:1247, :1256, :1262). */
export const defaultActivationOffload = {
  fraction: 1,
  minTensorElements: 1024 * 1024,
  deltaBytesPerPpRank: 0,
} as const;

/** Parses an --offload-modules list ("core_attn attn_proj" or "core_attn,attn_proj"), naming an unknown module and the choices. */
export const parseOffloadModules = (text: string): OffloadModule[] =>
  parseModuleList(
    '--offload-modules',
    text,
    offloadModuleNames,
    'transformer_config.py:1863-1867',
    `--fine-grained-activation-offloading needs --offload-modules, one or more of ${offloadModuleNames.join(', ')} (transformer_config.py:1852).`,
  );

/**
 * Megatron's refusals of an offload setup (transformer_config.py, core_v0.19.0), each with its line,
 * and what the projection does not price: attn_proj alone without core_attn (:1868-1873); a module
 * inside the MoE layer while `moe` is recomputed (:1874-1884); the fraction outside [0, 1]
 * (:1888-1890); Δ below 0 (:1891-1893); fused_group_mlp, which needs --use-transformer-engine-op-fuser
 * (:1895-1897), is refused as not priced: the projection has no model of Transformer Engine's
 * fused grouped MLP (the op fuser's FC1 + activation + FC2, TE ≥ 2.14, experts at TP 1:
 * experts.py:332-348), neither its kernels' time nor what it saves for backward, which is the group
 * the module offloads (experts.py:673-711); with CUDA graphs the guide's constraints (cuda_graph_impl
 * transformer_engine, no attn_norm or mlp_norm: fine_grained_activation_offloading.md, "CUDA Graph
 * Integration") are refused as not priced.
 */
export function activationOffloadRefusals(
  o: ActivationOffload,
  job: { readonly recomputeModules: readonly RecomputeModule[]; readonly cudaGraphs: boolean },
): string[] {
  const T = 'megatron/core/transformer/transformer_config.py';
  const out: string[] = [];
  const on = new Set(o.modules);
  if (on.has('attn_proj') && !on.has('core_attn'))
    out.push(
      `attn_proj cannot be set to offload_modules alone without core_attn because the input of attn_proj is the output of core_attn, which is needed in core_attn.backward() (${T}:1868-1873).`,
    );
  const insideMoe = (['moe_act', 'expert_fc1', 'fused_group_mlp'] as const).filter((m) => on.has(m));
  if (job.recomputeModules.includes('moe') && insideMoe.length)
    out.push(
      `Cannot offload ${insideMoe.join(', ')} while recomputing the entire MoE layer (${T}:1874-1884): remove 'moe' from --recompute-modules or ${insideMoe.join(', ')} from --offload-modules.`,
    );
  if (!(o.fraction >= 0 && o.fraction <= 1))
    out.push(`activation_offload_fraction must be in range [0, 1] (${T}:1888-1890); got ${o.fraction}.`);
  if (!(o.deltaBytesPerPpRank >= 0))
    out.push(
      `delta_offload_bytes_across_pp_ranks must be non-negative (${T}:1891-1893); got ${o.deltaBytesPerPpRank}.`,
    );
  if (on.has('fused_group_mlp'))
    out.push(
      `fused_group_mlp requires use_transformer_engine_op_fuser (${T}:1895-1897), Transformer Engine's fused grouped MLP (TE ≥ 2.14, experts at TP 1: megatron/core/transformer/moe/experts.py:332-348), which the projection does not model (neither its kernels' time nor the tensors it saves for backward, the group fused_group_mlp offloads, experts.py:673-711): offload expert_fc1 and moe_act instead.`,
    );
  if (job.cudaGraphs)
    out.push(
      'fine-grained activation offloading with CUDA graphs (cuda_graph_impl transformer_engine, no attn_norm or mlp_norm: fine_grained_activation_offloading.md) is not priced: project it with --cuda-graph-impl none.',
    );
  return out;
}
