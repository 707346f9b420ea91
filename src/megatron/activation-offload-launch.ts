// Megatron-LM's start-up checks on --fine-grained-activation-offloading and --offload-modules,
// replayed on a launch's arguments (core_v0.19.0): arguments.py validate_args (:1854-1859, :1869-1870)
// and TransformerConfig.__post_init__ (transformer_config.py:1848-1903, and with CUDA graphs
// :2465-2468 and :2596-2642). Each failure names its file and line at the pin.
import { defaultActivationOffload, offloadTunings, offloadTuningRules } from './activation-offload.ts';

/** One failed check: the source line at the pin and Megatron's message. */
export interface OffloadLaunchFailure {
  readonly source: string;
  readonly message: string;
}

/** What the checks read of a launch: its flags (argparse's view) and environment variables. */
export interface OffloadLaunch {
  /** A flag's value ('true' for a switch), or undefined when absent. */
  readonly flag: (name: string) => string | true | undefined;
  /** The words after a list-valued flag (nargs="*"), or undefined when absent. */
  readonly list: (name: string) => readonly string[] | undefined;
  readonly env: Readonly<Record<string, string>>;
  /**
   * Transformer Engine's [major, minor] (absent: unknown; the NVTE_CPU_OFFLOAD_V1 rule of TE ≥ 2.10
   * is then applied, since the variable set is harmless on an older TE).
   */
  readonly transformerEngineVersion?: readonly [number, number];
}

/**
 * The environment a launch with --fine-grained-activation-offloading needs: NVTE_CPU_OFFLOAD_V1=1
 * from Transformer Engine 2.10 (arguments.py:1857-1859), harmless before it.
 */
export const offloadLaunchEnv: Readonly<Record<string, string>> = { NVTE_CPU_OFFLOAD_V1: '1' };

/** transformer_config.py:1854-1863's allowed_modules. */
const allowedModules = [
  'core_attn',
  'attn_proj',
  'expert_fc1',
  'fused_group_mlp',
  'moe_act',
  'attn_norm',
  'mlp_norm',
  'qkv_linear',
] as const;
/** The modules a local CUDA graph supports offloading (transformer_config.py:2599). */
const localGraphModules = new Set(['expert_fc1', 'moe_act', 'fused_group_mlp']);

/** Python's repr of a set of strings, sorted (the messages print Megatron's sets). */
const pySet = (names: readonly string[]): string =>
  `{${[...names]
    .sort()
    .map((n) => `'${n}'`)
    .join(', ')}}`;

/**
 * Every check of the pinned release on the offload flags that `l` fails; [] without
 * --fine-grained-activation-offloading (the checks are all under it).
 */
export function offloadLaunchRefusals(l: OffloadLaunch): OffloadLaunchFailure[] {
  if (!l.flag('--fine-grained-activation-offloading')) return [];
  const A = 'megatron/training/arguments.py';
  const T = 'megatron/core/transformer/transformer_config.py';
  const out: OffloadLaunchFailure[] = [];
  const fail = (source: string, message: string): void => void out.push({ source, message });
  const str = (name: string, fallback: string): string => {
    const v = l.flag(name);
    return typeof v === 'string' ? v : fallback;
  };
  const num = (name: string, fallback: number): number => Number(str(name, String(fallback)));

  // arguments.py:1854-1859.
  if (str('--transformer-impl', 'transformer_engine') !== 'transformer_engine')
    fail(
      `${A}:1855-1856`,
      'Fine-grained activation offloading is only supported with transformer_engine implementation',
    );
  const te = l.transformerEngineVersion;
  if ((!te || te[0] > 2 || (te[0] === 2 && te[1] >= 10)) && l.env.NVTE_CPU_OFFLOAD_V1 !== '1')
    fail(
      `${A}:1857-1859`,
      'For fine-grained activation offloading with TE >= 2.10.0, NVTE_CPU_OFFLOAD_V1 should be set to 1 to avoid offloading weights.',
    );

  // transformer_config.py:1848-1903. cpu_offloading is --cpu-offloading, or set by
  // --cpu-offloading-num-layers > 0 (arguments.py:1869-1870).
  const cpuOffloading = !!l.flag('--cpu-offloading') || num('--cpu-offloading-num-layers', 0) > 0;
  if (cpuOffloading)
    fail(`${T}:1849-1851`, 'fine_grained_activation_offloading cannot be enabled with cpu_offloading.');
  const modules = [...new Set(l.list('--offload-modules') ?? [])];
  if (!modules.length) fail(`${T}:1852`, 'assert self.offload_modules is not None and len(self.offload_modules) > 0');
  const invalid = modules.filter((m) => !(allowedModules as readonly string[]).includes(m));
  if (invalid.length)
    fail(
      `${T}:1863-1867`,
      `Invalid choices for offload_modules: ${pySet(invalid)}. Allowed modules are: ${pySet(allowedModules)}`,
    );
  const on = new Set(modules);
  if (on.has('attn_proj') && !on.has('core_attn'))
    fail(
      `${T}:1868-1873`,
      'attn_proj cannot be set to offload_modules alone without core_attn because the input of attn_proj is the output of core_attn, which is needed in core_attn.backward().',
    );
  const granularity = l.flag('--recompute-activations') ? 'selective' : str('--recompute-granularity', '');
  const recompute = l.list('--recompute-modules') ?? ['core_attn'];
  const insideMoe = ['moe_act', 'expert_fc1', 'fused_group_mlp'].filter((m) => on.has(m));
  if (granularity === 'selective' && recompute.includes('moe') && insideMoe.length)
    fail(
      `${T}:1874-1884`,
      `Cannot offload ${pySet(insideMoe)} while recomputing the entire MoE layer. 'moe' in recompute_modules wraps the full MoE forward in a checkpoint, so offloading activations inside it is redundant and will cause errors. Either remove 'moe' from --recompute-modules or remove ${pySet(insideMoe)} from --offload-modules.`,
    );
  for (const k of offloadTunings) {
    const r = offloadTuningRules[k];
    if (!r.holds(num(r.flag, defaultActivationOffload[k]))) fail(`${T}:${r.lines}`, r.assertion);
  }
  if (on.has('fused_group_mlp')) {
    if (!l.flag('--use-transformer-engine-op-fuser'))
      fail(`${T}:1895-1897`, 'fused_group_mlp requires use_transformer_engine_op_fuser.');
    const partial = ['expert_fc1', 'moe_act'].filter((m) => on.has(m));
    if (partial.length)
      fail(
        `${T}:1898-1903`,
        `fused_group_mlp offloads the whole fused grouped MLP and cannot be combined with expert_fc1 or moe_act. Remove: ${pySet(partial)}`,
      );
  }

  // With CUDA graphs (transformer_config.py:2465-2642). --enable-cuda-graph is local,
  // --external-cuda-graph transformer_engine (:2365-2381). --cuda-graph-modules is a list
  // (nargs="*"); its default and "full" are the whole layer, the empty list (cuda_graph_config.py:39-41).
  const impl = l.flag('--enable-cuda-graph')
    ? 'local'
    : l.flag('--external-cuda-graph')
      ? 'transformer_engine'
      : str('--cuda-graph-impl', 'none');
  if (impl === 'none') return out;
  if (cpuOffloading && impl !== 'full_iteration')
    fail(`${T}:2467-2468`, 'CUDA graphs not supported with CPU offloading.');
  const graphModules = (l.list('--cuda-graph-modules') ?? ['full']).flatMap((w) => w.split(',')).filter(Boolean);
  const scopes = graphModules.includes('full') ? [] : graphModules;
  if (impl === 'local') {
    const unsupported = modules.filter((m) => !localGraphModules.has(m)).sort();
    if (unsupported.length)
      fail(
        `${T}:2598-2606`,
        `fine-grained activation offloading with cuda_graph_impl='local' only supports offload_modules 'expert_fc1', 'moe_act', and 'fused_group_mlp'. Unsupported offload_modules: [${unsupported.map((m) => `'${m}'`).join(', ')}].`,
      );
    if (!scopes.length)
      fail(
        `${T}:2607-2610`,
        "fine-grained activation offloading with cuda_graph_impl='local' is not supported with whole-layer CUDA graph capture.",
      );
  }
  const localPartialMoe =
    impl === 'local' && modules.length > 0 && modules.every((m) => localGraphModules.has(m)) && !scopes.includes('moe');
  if (!(impl === 'transformer_engine' || impl === 'full_iteration' || localPartialMoe))
    fail(
      `${T}:2617-2626`,
      'fine-grained activation offloading is only supported with transformer_engine CUDA graph implementation or local CUDA graph implementation with partial MoE offload. Local partial CUDA graphs are supported only for expert_fc1, moe_act, or fused_group_mlp offload when the full MoE module is not captured.',
    );
  if (scopes.includes('moe'))
    fail(`${T}:2627-2629`, 'Token-drop MoE is temporarily not supported with activation offloading.');
  if (!(num('--cuda-graph-warmup-steps', 3) > 0))
    fail(
      `${T}:2630-2633`,
      'cuda_graph_warmup_steps must be greater than 0 when enabling fine-grained activation offloading.',
    );
  if (impl === 'full_iteration') {
    const inflight = l.flag('--fine-grained-offloading-max-inflight-offloads');
    if (typeof inflight !== 'string' || !(Number(inflight) >= 0) || !Number.isInteger(Number(inflight)))
      fail(
        `${T}:2634-2642`,
        'fine_grained_offloading_max_inflight_offloads must be a non-negative integer when using fine-grained activation offloading with full-iteration CUDA graphs',
      );
  }
  return out;
}
