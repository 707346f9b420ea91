import type { Collectives } from '../comm/collectives.ts';

/**
 * How a tensor lives across ranks, which fixes its inner product in the adjoint test:
 * `replicated` = one logical tensor copied on every rank (counted once);
 * `per-rank` = independent per-rank tensors (shards or partial sums; inner products add over ranks).
 */
export type Placement = 'replicated' | 'per-rank';

/** A Megatron mapping: a forward collective and its backward, the forward's transpose. */
export interface MappingPair {
  readonly name: string;
  /** One line in the paper's words: "forward: identity · backward: all-reduce (f)". */
  readonly summary: string;
  readonly input: Placement;
  readonly output: Placement;
  /** `tensor` names the logical tensor in the collective's fingerprint. */
  forward<T>(comm: Collectives<T>, x: T, tensor?: string): Promise<T>;
  backward<T>(comm: Collectives<T>, dy: T, tensor?: string): Promise<T>;
}

const last = -1;
const seq = 0;

/** f — forward: identity · backward: all-reduce. [.., h] replicated → [.., h] per rank. */
export const copyToTensorParallelRegion: MappingPair = {
  name: 'copyToTensorParallelRegion',
  summary: 'forward: identity · backward: all-reduce (f)',
  input: 'replicated',
  output: 'per-rank',
  forward: async (_comm, x) => x,
  backward: (comm, dy, n) => comm.allReduce(dy, 'sum', n),
};

/** g — forward: all-reduce · backward: identity. [.., h] partial sums → [.., h] replicated. */
export const reduceFromTensorParallelRegion: MappingPair = {
  name: 'reduceFromTensorParallelRegion',
  summary: 'forward: all-reduce · backward: identity (g)',
  input: 'per-rank',
  output: 'replicated',
  forward: (comm, x, n) => comm.allReduce(x, 'sum', n),
  backward: async (_comm, dy) => dy,
};

/** Forward: split last dim · backward: all-gather last dim. [.., h] → [.., h/t]. */
export const scatterToTensorParallelRegion: MappingPair = {
  name: 'scatterToTensorParallelRegion',
  summary: 'forward: split last dim · backward: all-gather last dim',
  input: 'replicated',
  output: 'per-rank',
  forward: (comm, x) => comm.shard(x, last),
  backward: (comm, dy, n) => comm.allGather(dy, last, n),
};

/** Forward: all-gather last dim · backward: split last dim. [.., h/t] → [.., h]. */
export const gatherFromTensorParallelRegion: MappingPair = {
  name: 'gatherFromTensorParallelRegion',
  summary: 'forward: all-gather last dim · backward: split last dim',
  input: 'per-rank',
  output: 'replicated',
  forward: (comm, x, n) => comm.allGather(x, last, n),
  backward: (comm, dy) => comm.shard(dy, last),
};

/** Forward: split dim 0 (s) · backward: all-gather dim 0. [s, b, h] → [s/t, b, h]. */
export const scatterToSequenceParallelRegion: MappingPair = {
  name: 'scatterToSequenceParallelRegion',
  summary: 'forward: split dim 0 · backward: all-gather dim 0',
  input: 'replicated',
  output: 'per-rank',
  forward: (comm, x) => comm.shard(x, seq),
  backward: (comm, dy, n) => comm.allGather(dy, seq, n),
};

/**
 * Forward: all-gather dim 0 · backward: reduce-scatter dim 0. [s/t, b, h] → [s, b, h]. Korthikanti
 * et al.'s ḡ; before a ColumnParallelLinear Megatron-Core issues this pair inside the linear itself,
 * LinearWithGradAccumulationAndAsyncCommunication (tensor_parallel/layers.py:566-572 forward,
 * its backward's reduce-scatter), not through mappings.py's gather_from_sequence_parallel_region.
 */
export const gatherFromSequenceParallelRegion: MappingPair = {
  name: 'gatherFromSequenceParallelRegion',
  summary: 'forward: all-gather dim 0 · backward: reduce-scatter dim 0',
  input: 'per-rank',
  output: 'per-rank',
  forward: (comm, x, n) => comm.allGather(x, seq, n),
  backward: (comm, dy, n) => comm.reduceScatter(dy, seq, 'sum', n),
};

/** Forward: reduce-scatter dim 0 · backward: all-gather dim 0. [s, b, h] partial sums → [s/t, b, h]. */
export const reduceScatterToSequenceParallelRegion: MappingPair = {
  name: 'reduceScatterToSequenceParallelRegion',
  summary: 'forward: reduce-scatter dim 0 · backward: all-gather dim 0',
  input: 'per-rank',
  output: 'per-rank',
  forward: (comm, x, n) => comm.reduceScatter(x, seq, 'sum', n),
  backward: (comm, dy, n) => comm.allGather(dy, seq, n),
};

/**
 * Forward: all-gather last dim · backward: reduce-scatter last dim. [.., n/t] per rank → [.., n]
 * on every rank, whose gradient is a per-rank partial (Megatron-Core's
 * all_gather_last_dim_from_tensor_parallel_region, _AllGatherFromTensorParallelRegion in
 * mappings.py; used by attention when query groups < t to gather the fused QKV activations).
 */
export const allGatherLastDimFromTensorParallelRegion: MappingPair = {
  name: 'allGatherLastDimFromTensorParallelRegion',
  summary: 'forward: all-gather last dim · backward: reduce-scatter last dim',
  input: 'per-rank',
  output: 'per-rank',
  forward: (comm, x, n) => comm.allGather(x, last, n),
  backward: (comm, dy, n) => comm.reduceScatter(dy, last, 'sum', n),
};

/**
 * The two boundaries of a tensor-parallel region: `enter` before a ColumnParallelLinear (f, or
 * under SP gather_from_sequence_parallel_region) and `leave` after a RowParallelLinear (g, or under
 * SP reduce_scatter_to_sequence_parallel_region) — Megatron's TransformerLayer with and without SP.
 */
export function tensorParallelRegion(sp: boolean): { readonly enter: MappingPair; readonly leave: MappingPair } {
  return sp
    ? { enter: gatherFromSequenceParallelRegion, leave: reduceScatterToSequenceParallelRegion }
    : { enter: copyToTensorParallelRegion, leave: reduceFromTensorParallelRegion };
}

/** Short names used in the paper and in Megatron-LM. */
export const f = copyToTensorParallelRegion;
/** See `reduceFromTensorParallelRegion`. */
export const g = reduceFromTensorParallelRegion;
/** Alias of `copyToTensorParallelRegion`. */
export const copyToTP = copyToTensorParallelRegion;
/** Alias of `reduceFromTensorParallelRegion`. */
export const reduceFromTP = reduceFromTensorParallelRegion;

/** Every mapping of DESIGN.md's table, in its order. */
export const tensorParallelMappings: readonly MappingPair[] = [
  copyToTensorParallelRegion,
  reduceFromTensorParallelRegion,
  scatterToTensorParallelRegion,
  gatherFromTensorParallelRegion,
  scatterToSequenceParallelRegion,
  gatherFromSequenceParallelRegion,
  reduceScatterToSequenceParallelRegion,
];
