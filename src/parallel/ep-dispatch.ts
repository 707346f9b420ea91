// The expert-parallel `alltoall` token dispatcher's data movement, as Megatron-Core's
// MoEAlltoAllTokenDispatcher does it (megatron/core/transformer/moe/token_dispatcher.py,
// core_v0.19.0: preprocess, token_dispatch, dispatch_postprocess, combine_preprocess,
// token_combine), on host arrays over an EP group, without TP (tp_size = 1) and dropless.
// epPlan, epDispatchRows and epReturnRows move the rows of the MoE block under EP (moe-ep.ts);
// epDispatch composes them around a given expert function.
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
import { permutationOf, permuteRef, unpermuteRef } from '../reference/moe/permute.ts';
import type { MoeRouting } from '../reference/moe/routing.ts';

/** A rank's communicator in one group, on host arrays. */
export type EpComm = Collectives<HostTensor> & AllToAll<HostTensor>;

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
export function reorder(x: HostTensor, order: readonly number[], scatter: boolean): HostTensor {
  const h = x.shape[1]!;
  const y = new Float32Array(x.data.length);
  order.forEach((o, i) => {
    const [to, from] = scatter ? [o, i] : [i, o];
    y.set(x.data.subarray(from * h, (from + 1) * h), to * h);
  });
  return hostTensor(x.shape, y);
}

/** What every rank of the group needs to move its rows: the splits, the chunks and their expert-major order, local expert offsets. */
export interface EpPlan {
  /** Every EP rank's tokens per expert [ep][E]. */
  readonly counts: readonly (readonly number[])[];
  readonly splits: Splits;
  /** chunks[q][l]: rows rank q sends this rank's local expert l. */
  readonly chunks: readonly (readonly number[])[];
  /** sort_chunks_by_idxs: the source-major row landing at expert-major row i. */
  readonly order: readonly number[];
  /** Local expert l's received rows are [offsets[l], offsets[l + 1]) ([E/ep + 1]). */
  readonly offsets: Int32Array;
  /** The global index of this rank's first local expert. */
  readonly firstExpert: number;
}

/**
 * The dispatcher's preprocess: this rank's tokens per expert [E] all-gathered over the EP group
 * (`moe.tokens_per_expert`), then the splits and chunk order. Throws unless E splits evenly.
 */
export async function epPlan(comm: EpComm, tokensPerExpert: ArrayLike<number>): Promise<EpPlan> {
  const E = tokensPerExpert.length;
  if (E % comm.size !== 0)
    throw new Error(`epDispatch: ${E} experts do not split over an EP group of ${comm.size}; pick E divisible by ep.`);
  const all = await comm.allGather(hostTensor([1, E], Float32Array.from(tokensPerExpert)), 0, 'moe.tokens_per_expert');
  const counts = [...Array(comm.size).keys()].map((q) => Array.from(all.data.subarray(q * E, (q + 1) * E)));
  const { splits, chunks } = epSplits(counts, comm.rank);
  const local = E / comm.size;
  const offsets = new Int32Array(local + 1);
  for (let l = 0; l < local; l++) offsets[l + 1] = offsets[l]! + chunks.reduce((s, c) => s + c[l]!, 0);
  return { counts, splits, chunks, order: expertMajorOrder(chunks), offsets, firstExpert: comm.rank * local };
}

/** Permuted rows [N, h] (grouped by global expert) → this rank's local experts' rows [Σ recv, h], expert-major. */
export async function epDispatchRows(
  comm: AllToAll<HostTensor>,
  plan: EpPlan,
  xp: HostTensor,
  tensor: string,
): Promise<HostTensor> {
  return reorder(await comm.allToAll(xp, plan.splits, tensor), plan.order, false);
}

/** The local experts' output rows (expert-major) → back to the ranks their tokens came from, [N, h] in permuted order. */
export function epReturnRows(
  comm: AllToAll<HostTensor>,
  plan: EpPlan,
  rows: HostTensor,
  tensor: string,
): Promise<HostTensor> {
  return comm.allToAll(reorder(rows, plan.order, true), backwardSplits(plan.splits), tensor);
}

/** A dropless routing of given picks (every pick kept), so permutationOf lays out its rows. */
function droplessRouting(
  E: number,
  k: number,
  T: number,
  topIdx: ArrayLike<number>,
  topProb: ArrayLike<number>,
): MoeRouting {
  const tokensPerExpert = new Int32Array(E);
  for (let i = 0; i < T * k; i++) tokensPerExpert[topIdx[i]!]!++;
  return {
    tokens: T,
    experts: E,
    topk: k,
    topIdx: Int32Array.from(topIdx),
    topProb: Float64Array.from(topProb),
    kept: new Uint8Array(T * k).fill(1),
    capacity: null,
    tokensPerExpert,
    dropped: 0,
  };
}

/**
 * One EP rank's dispatch → local experts → combine over `comm` (its EP group, host arrays): the
 * counts all-gathered, then the two all-to-alls (`moe.dispatch`, `moe.combine`). Dropless: every
 * pick is sent. Throws unless the experts split evenly over the group (epPlan checks it).
 */
export async function epDispatch(
  comm: EpComm,
  input: EpDispatchInput,
  experts: LocalExperts,
): Promise<EpDispatchResult> {
  const { experts: E, topk: k, x, topIdx } = input;
  const [T, h] = [x.shape[0]!, x.shape[1]!];
  if (topIdx.length !== T * k || input.topProb.length !== T * k)
    throw new Error(`epDispatch: ${T} tokens × top-${k} need ${T * k} expert ids and weights.`);
  const routing = droplessRouting(E, k, T, topIdx, input.topProb);
  const perm = permutationOf(routing);
  const plan = await epPlan(comm, routing.tokensPerExpert);
  const xp = hostTensor(
    [T * k, h],
    Float32Array.from(permuteRef(x.data, h, perm.rowToken, new Float64Array(T * k).fill(1))),
  );
  const sorted = await epDispatchRows(comm, plan, xp, 'moe.dispatch');
  const expertRows = [...Array(plan.offsets.length - 1).keys()].map((l) =>
    hostTensor(
      [plan.offsets[l + 1]! - plan.offsets[l]!, h],
      sorted.data.slice(plan.offsets[l]! * h, plan.offsets[l + 1]! * h),
    ),
  );
  const outs = await experts(expertRows, plan.firstExpert);
  const joined = new Float32Array(sorted.data.length);
  outs.reduce((at, o) => (joined.set(o.data, at), at + o.data.length), 0);
  const back = await epReturnRows(comm, plan, hostTensor(sorted.shape, joined), 'moe.combine');
  const y = Float32Array.from(unpermuteRef(back.data, h, perm.pickRow, input.topProb, k));
  return { splits: plan.splits, chunks: plan.chunks, expertRows, y: hostTensor([T, h], y) };
}
