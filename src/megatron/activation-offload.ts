// Megatron-Core's --fine-grained-activation-offloading (transformer_config.py:1229-1265 and its
// rules :1848-1903, core_v0.19.0; docs/user-guide/features/fine_grained_activation_offloading.md):
// each listed submodule's input goes to the host in forward and comes back before its backward.
import { quoted } from '../core/quote.ts';
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

/** The tuning flags, as ActivationOffload names them. */
export type OffloadTuning = keyof typeof defaultActivationOffload;

/** The tuning flags in the order Megatron checks them (transformer_config.py:1885-1893). */
export const offloadTunings: readonly OffloadTuning[] = ['minTensorElements', 'fraction', 'deltaBytesPerPpRank'];

/**
 * Each tuning flag: its name, whether Megatron's field is an int (else a float, transformer_config.py:1247,
 * :1256, :1262), its assert (message and lines, :1885-1893) and an example of a value it takes.
 */
export const offloadTuningRules: Readonly<
  Record<
    OffloadTuning,
    {
      readonly flag: string;
      readonly int: boolean;
      readonly holds: (v: number) => boolean;
      readonly assertion: string;
      readonly lines: string;
      readonly write: string;
    }
  >
> = {
  minTensorElements: {
    flag: '--min-offloaded-tensor-size',
    int: true,
    holds: (v) => v >= 0,
    assertion: 'min_offloaded_tensor_size must be non-negative.',
    lines: '1885-1887',
    write: 'a whole number of elements ≥ 0 such as 1048576 (the default)',
  },
  fraction: {
    flag: '--activation-offload-fraction',
    int: false,
    holds: (v) => v >= 0 && v <= 1,
    assertion: 'activation_offload_fraction must be in range [0, 1].',
    lines: '1888-1890',
    write: 'a share from 0 to 1 such as 0.5 (1, the default, offloads every eligible group)',
  },
  deltaBytesPerPpRank: {
    flag: '--delta-offload-bytes-across-pp-ranks',
    int: true,
    holds: (v) => v >= 0,
    assertion: 'delta_offload_bytes_across_pp_ranks must be non-negative.',
    lines: '1891-1893',
    write: 'a whole number of bytes ≥ 0 such as 1073741824 (0, the default, keeps the same on every stage)',
  },
};

/** Megatron's refusal of a tuning flag's value (its assert and line), with what to write, or undefined. */
export function offloadTuningRefusal(k: OffloadTuning, v: number): string | undefined {
  const r = offloadTuningRules[k];
  if (r.holds(v)) return undefined;
  return `${r.flag} ${v}: Megatron asserts "${r.assertion}" (megatron/core/transformer/transformer_config.py:${r.lines}); write ${r.write}.`;
}

/**
 * A tuning flag's value as Megatron's argparse reads it (an int, or a float for the fraction), then
 * Megatron's assert on it (offloadTuningRefusal); the CLI and the page's controls both parse with it.
 */
export function parseOffloadTuning(k: OffloadTuning, text: string): number {
  const r = offloadTuningRules[k];
  const v = Number(text);
  const typed = r.int
    ? /^\s*-?\d+\s*$/.test(text) && Number.isSafeInteger(v)
    : text.trim() !== '' && Number.isFinite(v);
  if (!typed)
    throw new Error(`${r.flag} ${quoted(text)}: Megatron reads ${r.int ? 'an int' : 'a float'}; write ${r.write}.`);
  const why = offloadTuningRefusal(k, v);
  if (why) throw new Error(why);
  return v;
}

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
 * inside the MoE layer while `moe` is recomputed (:1874-1884); a tuning flag Megatron asserts on
 * (offloadTuningRefusal: the minimum size or Δ below 0, the fraction outside [0, 1], :1885-1893); fused_group_mlp, which needs --use-transformer-engine-op-fuser
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
  for (const k of offloadTunings) {
    const why = offloadTuningRefusal(k, o[k]);
    if (why) out.push(why);
  }
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
