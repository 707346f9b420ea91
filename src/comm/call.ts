import { formatShape, numel } from '../core/shape.ts';
import type { CollectiveOp, ReduceOp } from './collectives.ts';

/**
 * An all-to-all's rows along dim 0 per group rank, as torch.distributed.all_to_all_single's
 * input_split_sizes (`send[j]`: rows of the input that go to rank j, in rank order) and
 * output_split_sizes (`recv[j]`: rows of the result that come from rank j, in rank order).
 */
export interface Splits {
  readonly send: readonly number[];
  readonly recv: readonly number[];
}

/** One collective call as every rank describes it; ranks must agree on all fields. */
export interface CollectiveCall {
  readonly seq: number;
  readonly op: CollectiveOp;
  readonly dtype: 'f32';
  /** Rank-local input shape. */
  readonly shape: readonly number[];
  readonly dim?: number;
  readonly reduceOp?: ReduceOp;
  readonly root?: number;
  /** The logical tensor the call moves ("attn.reduce"), when the caller names it. */
  readonly tensor?: string;
  /**
   * An all-to-all's splits on this rank. Its calls agree across ranks when all but the rows
   * (shape[0]) and the splits agree and every rank i sends rank j the rows j expects from i
   * (send_i[j] = recv_j[i]).
   */
  readonly splits?: Splits;
}

/** "allGather(dim 0, f32 [8, 4]) #3", or with the tensor named: "allGather(dim 0, f32 [8, 4]) of ln1.gather #3" */
export function formatCall(c: CollectiveCall): string {
  const args: string[] = [];
  if (c.dim !== undefined) args.push(`dim ${c.dim}`);
  if (c.reduceOp !== undefined) args.push(c.reduceOp);
  if (c.root !== undefined) args.push(`root ${c.root}`);
  if (c.op !== 'barrier') args.push(`${c.dtype} ${formatShape(c.shape)}`);
  if (c.splits) args.push(`send [${c.splits.send.join(', ')}]`, `recv [${c.splits.recv.join(', ')}]`);
  return `${c.op}(${args.join(', ')})${c.tensor !== undefined ? ` of ${c.tensor}` : ''} #${c.seq}`;
}

/** `{ tensor }` when a name is given, else nothing (so unnamed calls keep their old fingerprint). */
export function named(tensor: string | undefined): { tensor?: string } {
  return tensor === undefined ? {} : { tensor };
}

/**
 * True when two calls are the same collective (same seq, op, dtype, shape, dim, reduction, root,
 * tensor); for an all-to-all, whose rows and splits are its rank's own, the same but for shape[0]
 * and the splits (splitMismatches checks those across the group).
 */
export function sameCall(a: CollectiveCall, b: CollectiveCall): boolean {
  const rows = a.op === 'allToAll' ? 1 : 0;
  return (
    a.seq === b.seq &&
    a.op === b.op &&
    a.dtype === b.dtype &&
    a.dim === b.dim &&
    a.reduceOp === b.reduceOp &&
    a.root === b.root &&
    a.tensor === b.tensor &&
    a.shape.length === b.shape.length &&
    sameShape(a.shape.slice(rows), b.shape.slice(rows))
  );
}

/** A pair of ranks whose all-to-all splits disagree: `from` sends `sends` rows to `to`, which expects `expects`. */
export interface SplitMismatch {
  readonly from: number;
  readonly to: number;
  readonly sends: number;
  readonly expects: number;
}

/** Every pair (i, j) of the group's all-to-all calls (index = group rank) with send_i[j] ≠ recv_j[i]. */
export function splitMismatches(calls: readonly CollectiveCall[]): SplitMismatch[] {
  const out: SplitMismatch[] = [];
  calls.forEach((a, from) =>
    calls.forEach((b, to) => {
      const sends = a.splits?.send[to];
      const expects = b.splits?.recv[from];
      if (sends !== undefined && expects !== undefined && sends !== expects) out.push({ from, to, sends, expects });
    }),
  );
  return out;
}

/** Whether the calls every rank of a group made (index = group rank) agree: the same call, and for an all-to-all consistent splits. */
export function callsAgree(calls: readonly CollectiveCall[]): boolean {
  return calls.every((c) => sameCall(c, calls[0]!)) && splitMismatches(calls).length === 0;
}

/** True when two shapes have the same dims. */
export function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/** Normalises a possibly negative dim (−1 = last) and checks it is inside the shape. */
export function resolveDim(op: string, shape: readonly number[], dim: number): number {
  const d = dim < 0 ? shape.length + dim : dim;
  if (!Number.isInteger(d) || d < 0 || d >= shape.length) {
    throw new Error(`${op}: dim ${dim} is outside shape ${formatShape(shape)}.`);
  }
  return d;
}

/** Throws unless shape[dim] splits evenly into `size` slices. */
export function checkDivisible(op: string, shape: readonly number[], dim: number, size: number): void {
  if (shape[dim] % size !== 0) {
    throw new Error(
      `${op}: dim ${dim} of shape ${formatShape(shape)} has size ${shape[dim]}, not divisible by the group size ${size}.`,
    );
  }
}

/** Shape of the result of `call` on a group of `size` ranks. */
export function outputShape(call: CollectiveCall, size: number): number[] {
  const s = [...call.shape];
  if (call.op === 'reduceScatter') s[call.dim!] /= size;
  if (call.op === 'allGather') s[call.dim!] *= size;
  if (call.op === 'allToAll') s[0] = call.splits!.recv.reduce((a, n) => a + n, 0);
  return s;
}

/** Payload bytes as nccl-tests counts them: reduce-scatter its input, all-gather its output. */
export function payloadBytes(call: CollectiveCall, size: number): number {
  if (call.op === 'barrier') return 0;
  const n = call.op === 'allGather' ? numel(call.shape) * size : numel(call.shape);
  return n * 4;
}
