// Megatron-LM's asserts on CUDA graphs (transformer_config.py __post_init__, arguments.py
// validate_args, core_v0.19.0): with recomputation (:2521-2566), on the per-layer scope
// --cuda-graph-modules (:2461-2536), and full_iteration's NaN check (arguments.py:1195-1197).
// Without --cuda-graph-modules the scope is empty, the whole layer (cuda_graph_config.py:39-41), and
// `full_cudagraph` (:2541-2544) holds for every impl.
import { quoted } from '../core/quote.ts';
import type { RecomputeModule } from './recompute-modules.ts';

/** Megatron's CUDA graph implementations that capture (transformer_config.py:1032). */
export type GraphImpl = 'local' | 'transformer_engine' | 'full_iteration';

/** Where validate_args asserts that full_iteration runs without the NaN check (arguments.py:1195-1197). */
export const fullIterationNanCheck = {
  source: 'megatron/training/arguments.py:1195-1197',
  message: '--no-check-for-nan-in-loss-and-grad should be set with --cuda-graph-impl=full_iteration for training.',
} as const;

/**
 * Megatron's flags for CUDA graphs `impl`: --cuda-graph-impl, and with full_iteration the
 * --no-check-for-nan-in-loss-and-grad that validate_args requires (arguments.py:1195-1197; the
 * flag is store_false on check_for_nan_in_loss_and_grad, default True, :2735-2737); a partial
 * `scope` as --cuda-graph-modules and its names (nargs='+', arguments.py:1969-1985; empty: left out,
 * the whole layer).
 */
export const cudaGraphFlags = (impl: GraphImpl, scope: readonly CudaGraphModule[] = []): string[] => [
  '--cuda-graph-impl',
  impl,
  ...(impl === 'full_iteration' ? ['--no-check-for-nan-in-loss-and-grad'] : []),
  ...(scope.length ? ['--cuda-graph-modules', ...scope] : []),
];

/**
 * Megatron's refusals of CUDA graphs `impl` with recomputation, each with its line: full
 * recomputation except under full_iteration (:2522-2525); with dropout in the model (GPT's
 * attention and hidden dropout 0.1), a recomputed `core_attn` (:2545-2552) or `mlp` / `moe`
 * (:2553-2566) inside the graph: the whole layer, or `attn` / `mlp` / `moe` in the scope.
 */
export function cudaGraphRecomputeRefusals(
  impl: GraphImpl,
  job: {
    readonly granularity: 'full' | 'selective' | undefined;
    readonly modules: readonly RecomputeModule[];
    readonly dropout: boolean;
    /** --cuda-graph-modules (absent or empty: the whole layer). */
    readonly scope?: readonly CudaGraphModule[];
  },
): string[] {
  const T = 'megatron/core/transformer/transformer_config.py';
  const out: string[] = [];
  // full_cudagraph: full_iteration or the empty scope (:2541-2544); else the named modules are graphed.
  const scope = job.scope ?? [];
  const graphed = (m: CudaGraphModule): boolean => impl === 'full_iteration' || !scope.length || scope.includes(m);
  if (job.granularity === 'full' && impl !== 'full_iteration')
    out.push(
      `full recompute is only supported with full iteration CUDA graph (${T}:2522-2525): use --cuda-graph-impl full_iteration or selective recomputation.`,
    );
  if (job.granularity === 'selective' && job.dropout) {
    if (job.modules.includes('core_attn') && graphed('attn'))
      out.push(
        `attention dropout is not supported with graphed attention recomputation (${T}:2545-2552): drop core_attn from --recompute-modules or the CUDA graphs.`,
      );
    if ((job.modules.includes('mlp') && graphed('mlp')) || (job.modules.includes('moe') && graphed('moe')))
      out.push(
        `hidden dropout is not supported with graphed MLP/MoE recomputation (${T}:2553-2566): drop mlp and moe from --recompute-modules or the CUDA graphs.`,
      );
  }
  return out;
}

/** --cuda-graph-modules' names (enums.py CudaGraphModule, core_v0.19.0): the per-layer capture regions. */
export const cudaGraphModuleNames = ['attn', 'mlp', 'moe', 'moe_router', 'moe_preprocess', 'mamba'] as const;
/** A per-layer capture region; the empty list is the whole layer (cuda_graph_config.py:39-41). */
export type CudaGraphModule = (typeof cudaGraphModuleNames)[number];

/**
 * --cuda-graph-modules (or its hidden deprecated alias --cuda-graph-scope, arguments.py:1966-1969)
 * as normalize_cuda_graph_modules reads it (cuda_graph_config.py:25-59): `full` alone is the
 * whole layer, the empty list; `full_iteration` is the deprecated spelling of
 * --cuda-graph-impl full_iteration (:10-13), refused here in favour of that flag.
 */
export function parseCudaGraphModules(text: string): CudaGraphModule[] {
  const C = 'megatron/core/transformer/cuda_graph_config.py';
  const names = text.split(/[\s,]+/).filter(Boolean);
  if (names.includes('full')) {
    if (names.length > 1)
      throw new Error(`--cuda-graph-modules: full scope cannot be used with other scopes (${C}:39-40).`);
    return [];
  }
  for (const n of names) {
    if (n === 'full_iteration' || n === 'full_iteration_inference')
      throw new Error(
        `--cuda-graph-modules ${n} is deprecated (${C}:10-13): write --cuda-graph-impl full_iteration and leave --cuda-graph-modules out.`,
      );
    if (!(cudaGraphModuleNames as readonly string[]).includes(n))
      throw new Error(
        `--cuda-graph-modules ${quoted(n)}: Megatron's CudaGraphModule names (enums.py:61-73) are ${cudaGraphModuleNames.join(', ')}, or full for the whole layer.`,
      );
  }
  return [...new Set(names)] as CudaGraphModule[];
}

/** What the scope rules read of the job's MoE layers (absent: a dense model). */
export interface GraphScopeMoe {
  /** Every layer is MoE (moe_layer_freq 1, or a pattern without 0). */
  readonly allLayersMoe: boolean;
  /** --moe-expert-capacity-factor set with --moe-pad-expert-input-to-capacity (drop-and-pad). */
  readonly dropAndPad: boolean;
  /** The alltoall dispatcher with a capacity factor or --moe-router-padding-for-fp8 (DtoH copies in preprocess). */
  readonly preprocessSyncs: boolean;
}

/**
 * Megatron's refusals of the per-layer scope `modules` under `impl` (transformer_config.py
 * __post_init__, core_v0.19.0), each with its line: a scope with full_iteration (:2461-2463); for
 * local and transformer_engine, moe with moe_router (:2484-2487; local adds moe_preprocess beside
 * moe_router and the reverse first, :2472-2482), moe_preprocess without moe_router (:2488-2491),
 * moe or moe_router in a dense model (:2492-2496), mlp where every layer is MoE (:2498-2504), moe
 * without drop-and-pad (:2505-2511), moe_preprocess with DtoH syncs in preprocess (:2512-2519);
 * with selective recomputation of moe under transformer_engine, moe_router (:2529-2536).
 */
export function cudaGraphScopeRefusals(
  impl: GraphImpl,
  modules: readonly CudaGraphModule[],
  job: { readonly moe: GraphScopeMoe | undefined; readonly recomputeModules: readonly RecomputeModule[] },
): string[] {
  const T = 'megatron/core/transformer/transformer_config.py';
  if (!modules.length) return [];
  if (impl === 'full_iteration')
    return [`cuda_graph_modules must be empty when cuda_graph_impl="full_iteration" (${T}:2461-2463).`];
  const on = new Set(modules);
  if (impl === 'local' && (on.has('moe_router') || on.has('moe_preprocess'))) {
    on.add('moe_router');
    on.add('moe_preprocess');
  }
  const out: string[] = [];
  const refuse = (lines: string, message: string): void => void out.push(`${message} (${T}:${lines})`);
  if (on.has('moe') && on.has('moe_router'))
    refuse('2484-2487', 'cuda_graph_modules must not contain both moe and moe_router.');
  if (on.has('moe_preprocess') && !on.has('moe_router'))
    refuse('2488-2491', 'moe_preprocess cuda graph is only supported with moe_router cuda graph.');
  const moe = job.moe;
  if (!moe) {
    if (on.has('moe') || on.has('moe_router')) refuse('2492-2496', 'moe cuda graph is only supported for MoE.');
  } else {
    if (moe.allLayersMoe && on.has('mlp'))
      refuse('2498-2504', 'mlp cuda graph is only supported for dense layers, but not found in the model.');
    if (!moe.dropAndPad && on.has('moe'))
      refuse('2505-2511', 'moe cuda graph is only supported with drop-padding MoE.');
    // Megatron checks the preprocess syncs inside the not-drop-and-pad branch only (:2505-2519).
    if (!moe.dropAndPad && moe.preprocessSyncs && on.has('moe_preprocess'))
      refuse(
        '2512-2519',
        'moe_preprocess cuda graph is not supported when there are DtoH copies and synchronizations in the preprocess step.',
      );
  }
  if (impl === 'transformer_engine' && job.recomputeModules.includes('moe') && on.has('moe_router'))
    refuse(
      '2529-2536',
      'moe recompute is not supported with moe_router CUDA graph with: --cuda-graph-impl transformer_engine.',
    );
  return out;
}
