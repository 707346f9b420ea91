// The all-to-all with per-peer counts (torch.distributed.all_to_all_single with input and output
// split sizes), as Megatron-Core's MoEAlltoAllTokenDispatcher calls it through
// megatron/core/tensor_parallel/mappings.py all_to_all (core_v0.19.0): its arguments, semantics
// and byte counts, shared by every transport.
import { formatShape, numel } from '../core/shape.ts';
import type { CollectiveCall, Splits } from './call.ts';
import { hostTensor, type HostTensor } from './host-tensor.ts';

/**
 * The splits a caller gives, rows along dim 0 per group rank: `send` = input_split_sizes (input
 * rows [Σ_{k<j} send[k], Σ_{k≤j} send[k]) go to rank j), `recv` = output_split_sizes (result rows
 * from rank j, in rank order). Both absent: even splits, dim 0 divided by the group size (torch's
 * default). `recv` absent, `send` given: every rank's send counts are exchanged first (one
 * all-to-all of t counts, traced as `<tensor>.counts`), as Megatron's dispatcher gathers
 * tokens-per-expert before its all-to-all. `send` absent, `recv` given: the input split evenly.
 */
export interface AllToAllSplits {
  readonly send?: readonly number[];
  readonly recv?: readonly number[];
}

/**
 * The all-to-all of one rank in a group of t: x [Σ send, ...rest] → [Σ recv, ...rest], the rows
 * rank j sent this rank in rank order j = 0…t−1. Every rank calls it at the same point; the rest of
 * the shape and the tensor name must agree, and rank i's send[j] must equal rank j's recv[i] (else
 * a CollectiveMismatchError naming each disagreeing pair). `out` as in Collectives.
 */
export interface AllToAll<T, O = never> {
  allToAll(x: T, splits?: AllToAllSplits, tensor?: string, out?: O): Promise<T>;
}

function checkCounts(what: string, counts: readonly number[], size: number): void {
  if (counts.length !== size || !counts.every((n) => Number.isInteger(n) && n >= 0))
    throw new Error(
      `allToAll: ${what} splits [${counts.join(', ')}] must be ${size} whole row counts ≥ 0, one per rank of the group.`,
    );
}

/** Even splits of `rows` over `size` ranks; throws unless they divide. */
function evenSplits(shape: readonly number[], size: number): number[] {
  if (shape[0]! % size !== 0)
    throw new Error(
      `allToAll: dim 0 of shape ${formatShape(shape)} has ${shape[0]} rows, not divisible by the group size ${size}; pass splits: { send, recv }.`,
    );
  return new Array<number>(size).fill(shape[0]! / size);
}

/**
 * The splits of a call on input `shape`, checked: `recv` undefined when it must be exchanged
 * (send given, recv absent). Throws before anything moves on a bad count.
 */
export function checkSplits(
  shape: readonly number[],
  size: number,
  splits: AllToAllSplits | undefined,
): { send: readonly number[]; recv: readonly number[] | undefined } {
  if (shape.length === 0)
    throw new Error('allToAll: a tensor of shape [] has no rows to split; pass a tensor of at least 1 dim.');
  const send = splits?.send ?? evenSplits(shape, size);
  checkCounts('send', send, size);
  const rows = send.reduce((a, n) => a + n, 0);
  if (rows !== shape[0])
    throw new Error(
      `allToAll: send splits [${send.join(', ')}] add up to ${rows} rows, but the input ${formatShape(shape)} has ${shape[0]}.`,
    );
  if (splits?.recv) checkCounts('recv', splits.recv, size);
  const recv = splits?.recv ?? (splits?.send ? undefined : send);
  return { send: [...send], recv: recv && [...recv] };
}

/** Elements of one row: the product of the dims after dim 0. */
export function rowElems(shape: readonly number[]): number {
  return numel(shape.slice(1));
}

/** Exclusive prefix sums: offsets[j] = Σ_{k<j} counts[k]. */
export function offsets(counts: readonly number[]): number[] {
  let at = 0;
  return counts.map((n) => ((at += n), at - n));
}

/**
 * The defining semantics: calls[q] and inputs[q] are rank q's; rank r's result is, for q = 0…t−1,
 * rows [off_q(r), off_q(r) + send_q[r]) of inputs[q], off_q = offsets(send_q).
 */
export function referenceAllToAll(calls: readonly CollectiveCall[], inputs: readonly HostTensor[]): HostTensor[] {
  const row = rowElems(inputs[0]!.shape);
  return calls.map((c, r) => {
    const rows = c.splits!.recv.reduce((a, n) => a + n, 0);
    const out = new Float32Array(rows * row);
    let at = 0;
    inputs.forEach((x, q) => {
      const send = calls[q]!.splits!.send;
      const lo = offsets(send)[r]! * row;
      out.set(x.data.subarray(lo, lo + send[r]! * row), at);
      at += send[r]! * row;
    });
    return hostTensor([rows, ...c.shape.slice(1)], out);
  });
}

/** Bytes a rank's all-to-all sends to and receives from each group rank (its own entry: the rows it keeps, copied locally). */
export function peerBytes(call: CollectiveCall): { sentBytes: number[]; receivedBytes: number[] } {
  const row = rowElems(call.shape) * 4;
  return { sentBytes: call.splits!.send.map((n) => n * row), receivedBytes: call.splits!.recv.map((n) => n * row) };
}

/** Bytes rank r sends to other ranks: Σ_{j≠r} send[j]·row·4. */
export function allToAllSentBytes(call: CollectiveCall, r: number): number {
  return peerBytes(call).sentBytes.reduce((a, b, j) => a + (j === r ? 0 : b), 0);
}

/**
 * The splits of an all-to-all's backward: the gradient of the result goes back the way the rows
 * came, send and recv swapped (mappings.py _AllToAll.backward passes input_split_sizes as the
 * output splits and output_split_sizes as the input splits).
 */
export function backwardSplits(s: Splits): Splits {
  return { send: s.recv, recv: s.send };
}
