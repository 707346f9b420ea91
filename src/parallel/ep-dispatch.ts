// The expert-parallel `alltoall` token dispatcher's data movement, as Megatron-Core's
// MoEAlltoAllTokenDispatcher does it (megatron/core/transformer/moe/token_dispatcher.py,
// core_v0.19.0: preprocess, token_dispatch, dispatch_postprocess, combine_preprocess,
// token_combine), on host arrays over an EP group, without TP (tp_size = 1) and dropless: a
// skeleton that the MoE layer's kernels (router, permute, grouped GEMM, combine) plug into.
//
//   counts[e]      picks of this rank's tokens routed to expert e                      [E]
//   all-gather     every EP rank's counts (Megatron gathers them over the TP·EP group)   [ep, E]
//   send[j]        Σ counts[e] over EP rank j's experts, j·E_l ≤ e < (j + 1)·E_l, E_l = E/ep
//   recv[q]        Σ over this rank's local experts of rank q's counts                    [ep]
//   permute        picks grouped by expert (expert 0 first), tokens in order inside each   [N, h]
//   all-to-all     rows to the ranks owning their experts: [Σ_q recv[q], h], source-major
//   sort chunks    [source q][local expert l] chunks reordered to [l][q] (sort_chunks_by_idxs)
//   experts        each local expert on its contiguous rows
//   unsort, all-to-all back (splits swapped), unpermute: y_t = Σ_j w_{t,j} · out(pick t, j)
import type { AllToAll } from '../comm/all-to-all.ts';
import { backwardSplits } from '../comm/all-to-all.ts';
import type { Splits } from '../comm/call.ts';
import type { Collectives } from '../comm/collectives.ts';
import { hostTensor, type HostTensor } from '../comm/host-tensor.ts';

/** One EP rank's routed tokens: x [T, h]; pick j of token t went to expert topIdx[t·k + j] with weight topProb[t·k + j]. */
export interface EpDispatchInput {
  readonly experts: number;
  readonly topk: number;
  readonly x: HostTensor;
  readonly topIdx: ArrayLike<number>;
  readonly topProb: ArrayLike<number>;
}

/**
 * A rank's local experts applied to their rows: `rows[l]` [n_l, h] are local expert l's (global
 * expert rank·E_l + l) tokens, source rank by source rank; returns their outputs, same shapes.
 */
export type LocalExperts = (rows: readonly HostTensor[], firstExpert: number) => HostTensor[] | Promise<HostTensor[]>;

/** What one EP rank's dispatch did: its splits, each local expert's input rows, and the combined output [T, h]. */
export interface EpDispatchResult {
  readonly splits: Splits;
  /** chunks[q][l]: rows rank q sent this rank's local expert l. */
  readonly chunks: readonly (readonly number[])[];
  readonly expertRows: readonly HostTensor[];
  readonly y: HostTensor;
}

/** The all-to-all's splits and per-(source, local expert) chunk sizes from every EP rank's counts [ep][E]. */
export function epSplits(counts: readonly (readonly number[])[], rank: number): { splits: Splits; chunks: number[][] } {
  const ep = counts.length;
  const local = counts[0]!.length / ep;
  const sum = (a: readonly number[]): number => a.reduce((s, n) => s + n, 0);
  const chunks = counts.map((c) => c.slice(rank * local, (rank + 1) * local));
  return {
    splits: {
      send: [...Array(ep).keys()].map((j) => sum(counts[rank]!.slice(j * local, (j + 1) * local))),
      recv: chunks.map(sum),
    },
    chunks,
  };
}

/**
 * Row order of sort_chunks_by_idxs: rows in chunks [q][l] (source-major) → [l][q]; order[i] is
 * the source-major row that lands at expert-major row i.
 */
export function expertMajorOrder(chunks: readonly (readonly number[])[]): number[] {
  const ep = chunks.length;
  const local = chunks[0]?.length ?? 0;
  const start: number[][] = [];
  let at = 0;
  for (let q = 0; q < ep; q++) start.push(chunks[q]!.map((n) => ((at += n), at - n)));
  const order: number[] = [];
  for (let l = 0; l < local; l++)
    for (let q = 0; q < ep; q++) for (let m = 0; m < chunks[q]![l]!; m++) order.push(start[q]![l]! + m);
  return order;
}

/** Rows of x [n, h] taken in `order` (y[i] = x[order[i]]), or scattered back (y[order[i]] = x[i]). */
function reorder(x: HostTensor, order: readonly number[], scatter: boolean): HostTensor {
  const h = x.shape[1]!;
  const y = new Float32Array(x.data.length);
  order.forEach((o, i) => {
    const [to, from] = scatter ? [o, i] : [i, o];
    y.set(x.data.subarray(from * h, (from + 1) * h), to * h);
  });
  return hostTensor(x.shape, y);
}

/**
 * One EP rank's dispatch → local experts → combine over `comm` (its EP group, host arrays): the
 * counts all-gathered, then the two all-to-alls (`moe.dispatch`, `moe.combine`). Dropless: every
 * pick is sent. Throws unless the experts split evenly over the group.
 */
export async function epDispatch(
  comm: Collectives<HostTensor> & AllToAll<HostTensor>,
  input: EpDispatchInput,
  experts: LocalExperts,
): Promise<EpDispatchResult> {
  const { experts: E, topk: k, x, topIdx } = input;
  const [T, h] = [x.shape[0]!, x.shape[1]!];
  if (E % comm.size !== 0)
    throw new Error(`epDispatch: ${E} experts do not split over an EP group of ${comm.size}; pick E divisible by ep.`);
  if (topIdx.length !== T * k || input.topProb.length !== T * k)
    throw new Error(`epDispatch: ${T} tokens × top-${k} need ${T * k} expert ids and weights.`);
  const counts = new Array<number>(E).fill(0);
  for (let i = 0; i < T * k; i++) counts[topIdx[i]!]!++;
  const all = await comm.allGather(hostTensor([1, E], Float32Array.from(counts)), 0, 'moe.tokens_per_expert');
  const byRank = [...Array(comm.size).keys()].map((q) => Array.from(all.data.subarray(q * E, (q + 1) * E)));
  const { splits, chunks } = epSplits(byRank, comm.rank);
  // Permute: picks grouped by expert, tokens in order inside each; pickRow[t·k + j] is the row of pick j of token t.
  const next: number[] = [];
  counts.reduce((at, n) => (next.push(at), at + n), 0);
  const pickRow = new Int32Array(T * k);
  const xp = new Float32Array(T * k * h);
  for (let i = 0; i < T * k; i++) {
    const row = next[topIdx[i]!]!++;
    pickRow[i] = row;
    xp.set(x.data.subarray(Math.floor(i / k) * h, (Math.floor(i / k) + 1) * h), row * h);
  }
  const received = await comm.allToAll(hostTensor([T * k, h], xp), splits, 'moe.dispatch');
  const order = expertMajorOrder(chunks);
  const sorted = reorder(received, order, false);
  const local = E / comm.size;
  const sizes = [...Array(local).keys()].map((l) => chunks.reduce((s, c) => s + c[l]!, 0));
  const expertRows: HostTensor[] = [];
  sizes.reduce((at, n) => {
    expertRows.push(hostTensor([n, h], sorted.data.slice(at * h, (at + n) * h)));
    return at + n;
  }, 0);
  const outs = await experts(expertRows, comm.rank * local);
  const joined = new Float32Array(sorted.data.length);
  outs.reduce((at, o) => (joined.set(o.data, at), at + o.data.length), 0);
  const back = await comm.allToAll(
    reorder(hostTensor(sorted.shape, joined), order, true),
    backwardSplits(splits),
    'moe.combine',
  );
  // Unpermute with the weights: y_t = Σ_j w_{t,j} · back[pickRow[t·k + j]].
  const y = new Float32Array(T * h);
  for (let i = 0; i < T * k; i++) {
    const t = Math.floor(i / k);
    const w = input.topProb[i]!;
    for (let c = 0; c < h; c++) y[t * h + c] += w * back.data[pickRow[i]! * h + c]!;
  }
  return { splits, chunks, expertRows, y: hostTensor([T, h], y) };
}
