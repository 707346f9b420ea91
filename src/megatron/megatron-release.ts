/**
 * Megatron-Core releases whose behaviour the projection tells apart where a run's code differs from
 * core_v0.19.0, the release it models by default. Each difference is a property of the release,
 * read from its source (git history of NVIDIA/Megatron-LM), never a knob fitted to a run.
 *
 * - `core_r0.8`: the distributed optimizer of November 2023 to September 2024 (from "Overlap
 *   all-gather in distributed optimizer", 2023-11-17, which added --overlap-param-gather, to
 *   ADLR/megatron-lm!1975, 2024-09-07, which moved the gather into megatron/core/distributed);
 *   tag core_r0.8.0 (2024-08-12) is its last release.
 * - `core_v0.19`: core_r0.9.0 (2024-10-24) on, to core_v0.19.0.
 */
export type MegatronRelease = 'core_r0.8' | 'core_v0.19';

/**
 * When the first bucket's parameter all-gather is dispatched with --overlap-param-gather and no
 * align_param_gather (1F1B, v = 1):
 *
 * - `step-start`: in `optimizer.zero_grad()` at the start of every step, on every rank
 *   (train_step → optimizer.zero_grad(), training.py:586; distrib_optimizer.py:1330-1337
 *   `_dispatch_gather_model_params(all_gather_handle_index=0)`, core_r0.8.0); handle 0 is the
 *   first bucket in forward order (`_get_model_param_buffer_dp_views` inserts each chunk's buckets
 *   at the front, :1355-1375), each wait dispatches the next (:1454-1475). A stage's gather runs
 *   while the stage waits for its first input.
 * - `first-forward`: by the stage's first forward pre-hook, which dispatches the bucket not yet
 *   dispatched and waits for it (param_and_grad_buffer.py finish_param_sync, core_r0.9.0 :211-214;
 *   core_v0.19.0 :551-567); zero_grad dispatches nothing (distrib_optimizer.py, core_r0.9.0 on).
 *
 * Both releases give pipeline ranks > 0 one bucket (distributed_data_parallel.py:71-72 at
 * core_r0.8.0; training.py:1859-1868 at core_v0.19.0).
 */
export type ParamGatherDispatch = 'step-start' | 'first-forward';

export const paramGatherDispatchOf = (release: MegatronRelease): ParamGatherDispatch =>
  release === 'core_r0.8' ? 'step-start' : 'first-forward';
