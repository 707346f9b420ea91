// Megatron-LM's asserts on CUDA graphs with recomputation (transformer_config.py:2521-2566,
// core_v0.19.0), for the whole-layer capture the projection and the page price: without
// --cuda-graph-modules the per-layer scope is empty, the whole layer (cuda_graph_config.py:39-41), so
// `full_cudagraph` (:2541-2544) holds for every impl.
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
 * flag is store_false on check_for_nan_in_loss_and_grad, default True, :2735-2737).
 */
export const cudaGraphFlags = (impl: GraphImpl): string[] => [
  '--cuda-graph-impl',
  impl,
  ...(impl === 'full_iteration' ? ['--no-check-for-nan-in-loss-and-grad'] : []),
];

/**
 * Megatron's refusals of CUDA graphs `impl` with recomputation, each with its line: full
 * recomputation except under full_iteration (:2522-2525); with dropout in the model (GPT's
 * attention and hidden dropout 0.1), a recomputed `core_attn` (:2545-2552) or `mlp` / `moe`
 * (:2553-2566) inside the graph.
 */
export function cudaGraphRecomputeRefusals(
  impl: GraphImpl,
  job: {
    readonly granularity: 'full' | 'selective' | undefined;
    readonly modules: readonly RecomputeModule[];
    readonly dropout: boolean;
  },
): string[] {
  const T = 'megatron/core/transformer/transformer_config.py';
  const out: string[] = [];
  if (job.granularity === 'full' && impl !== 'full_iteration')
    out.push(
      `full recompute is only supported with full iteration CUDA graph (${T}:2522-2525): use --cuda-graph-impl full_iteration or selective recomputation.`,
    );
  if (job.granularity === 'selective' && job.dropout) {
    if (job.modules.includes('core_attn'))
      out.push(
        `attention dropout is not supported with graphed attention recomputation (${T}:2545-2552): drop core_attn from --recompute-modules or the CUDA graphs.`,
      );
    if (job.modules.includes('mlp') || job.modules.includes('moe'))
      out.push(
        `hidden dropout is not supported with graphed MLP/MoE recomputation (${T}:2553-2566): drop mlp and moe from --recompute-modules or the CUDA graphs.`,
      );
  }
  return out;
}
