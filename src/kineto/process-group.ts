// The parallel dimension of a Megatron-Core process group, read from the description Megatron
// gives it. Megatron-Core names each group it creates (`create_group(..., group_desc=...)` in
// megatron/core/parallel_state.py at core_v0.19.0, e.g. :1169 TENSOR_MODEL_PARALLEL_GROUP, :968
// DATA_PARALLEL_GROUP_WITH_CP, :1058 DATA_PARALLEL_GROUP, :1122 CONTEXT_PARALLEL_GROUP, :1250
// PIPELINE_MODEL_PARALLEL_GROUP, :1274 EMBEDDING_GROUP, :1362 EXPERT_MODEL_PARALLEL_GROUP); PyTorch
// records it in the trace as `pg_desc` (distributedInfo.pg_config) and as the NCCL kernel's
// `Process Group Description`. Hierarchical groups are `HIERARCHICAL_<desc>_L<level>` (:420).

/** What a process group parallelizes: tensor, context, data, pipeline, expert, or something else (model-parallel, mixed). */
export type GroupDim = 'tp' | 'cp' | 'dp' | 'pp' | 'ep' | 'other';

/** Megatron-Core's group descriptions and the dimension each serves (parallel_state.py, core_v0.19.0). */
export const megatronGroupDims: Readonly<Record<string, GroupDim>> = {
  TENSOR_MODEL_PARALLEL_GROUP: 'tp',
  CONTEXT_PARALLEL_GROUP: 'cp',
  DATA_PARALLEL_GROUP: 'dp',
  DATA_PARALLEL_GROUP_GLOO: 'dp',
  DATA_PARALLEL_GROUP_WITH_CP: 'dp',
  DATA_PARALLEL_GROUP_WITH_CP_GLOO: 'dp',
  INTRA_PARTIAL_DATA_PARALLEL_GROUP_WITH_CP: 'dp',
  INTRA_PARTIAL_DATA_PARALLEL_GROUP_WITH_CP_GLOO: 'dp',
  PIPELINE_MODEL_PARALLEL_GROUP: 'pp',
  EMBEDDING_GROUP: 'pp',
  POSITION_EMBEDDING_GROUP: 'pp',
  EXPERT_MODEL_PARALLEL_GROUP: 'ep',
  EXPERT_DATA_PARALLEL_GROUP: 'dp',
  EXPERT_TENSOR_PARALLEL_GROUP: 'tp',
  MODEL_PARALLEL_GROUP: 'other',
  TENSOR_AND_DATA_PARALLEL_GROUP: 'other',
  TENSOR_AND_DATA_PARALLEL_GROUP_WITH_CP: 'other',
  TENSOR_AND_CONTEXT_PARALLEL_GROUP: 'other',
};

/**
 * The dimension of the group a trace describes as `desc`; undefined when the trace names no group
 * or a group Megatron-Core does not create (a job outside Megatron, an older PyTorch).
 */
export function groupDimOf(desc: string | undefined): GroupDim | undefined {
  if (!desc) return undefined;
  const base = /^HIERARCHICAL_(.+?)(?:_GLOO)?_L\d+$/.exec(desc)?.[1] ?? desc;
  return Object.hasOwn(megatronGroupDims, base) ? megatronGroupDims[base] : undefined;
}

/** How the views name a group dimension. */
export const groupDimNames: Readonly<Record<GroupDim, string>> = {
  tp: 'TP group',
  cp: 'CP group',
  dp: 'DP group',
  pp: 'pipeline group',
  ep: 'expert group',
  other: 'mixed group',
};

/** " in the TP group", or "" for a group of unknown dimension. */
export const inGroupDim = (dim: GroupDim | undefined): string => (dim ? ` in the ${groupDimNames[dim]}` : '');
