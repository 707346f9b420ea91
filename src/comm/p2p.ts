import { formatShape } from '../core/shape.ts';
import { sameShape } from './call.ts';
import { groupName, memberName, type GroupView } from '../mesh/process-group.ts';

/**
 * One point-to-point op of a batch, as torch.distributed.P2POp (isend / irecv) that Megatron's
 * pipeline passes to batch_isend_irecv (megatron/core/pipeline_parallel/p2p_communication.py):
 * a send of `x` to group rank `peer`, or a receive of a tensor of `shape` from it. `tensor` names
 * the logical tensor ("stage1.act"); it is part of the pair's fingerprint.
 */
export type P2POp<T> =
  | { readonly op: 'send'; readonly peer: number; readonly x: T; readonly tensor?: string }
  | { readonly op: 'recv'; readonly peer: number; readonly shape: readonly number[]; readonly tensor?: string };

/**
 * Point-to-point messages between two ranks of one group (`T`: a HostTensor or a GPU tensor).
 * batchIsendIrecv posts every send and every receive of the batch at once and resolves when all
 * have completed, with the received tensors in the order of the batch's recv ops; no op waits for
 * another of its batch, so a batch that sends to rank r + 1 and receives from r − 1 on every rank
 * completes. The k-th send from a to b is matched with the k-th receive at b from a; their
 * fingerprints (shape, dtype, tensor name) must agree, else the receiver fails naming both.
 */
export interface PointToPoint<T> {
  batchIsendIrecv(ops: readonly P2POp<T>[]): Promise<T[]>;
  send(x: T, peer: number, tensor?: string): Promise<void>;
  recv(shape: readonly number[], peer: number, tensor?: string): Promise<T>;
}

/** The fingerprint of one message: the k-th (`seq`) from group rank `from` to group rank `to`. */
export interface P2PCall {
  readonly seq: number;
  readonly from: number;
  readonly to: number;
  readonly dtype: 'f32';
  readonly shape: readonly number[];
  readonly tensor?: string;
}

/** Whether a sent message is the one a receiver expects. */
export function sameP2P(a: P2PCall, b: P2PCall): boolean {
  return (
    a.seq === b.seq &&
    a.from === b.from &&
    a.to === b.to &&
    a.dtype === b.dtype &&
    a.tensor === b.tensor &&
    sameShape(a.shape, b.shape)
  );
}

/** "f32 [4, 8] of stage0.act #2". */
export function formatP2P(c: P2PCall): string {
  return `${c.dtype} ${formatShape(c.shape)}${c.tensor !== undefined ? ` of ${c.tensor}` : ''} #${c.seq}`;
}

/** Group rank i: by its global rank and coordinates in a mesh group, else "rank i". */
export function groupRank(i: number, group: GroupView | undefined): string {
  return group ? memberName(group, i) : `rank ${i}`;
}

/** " in the DP group 1 (ranks 1, 3)", or nothing outside a mesh. */
export function inGroup(group: GroupView | undefined): string {
  return group ? ` in ${groupName(group)}` : '';
}

/** A receiver got another message than it expected from its peer: names both ends and both fingerprints. */
export class P2PMismatchError extends Error {
  override readonly name = 'P2PMismatchError';
  constructor(expected: P2PCall, got: P2PCall, group?: GroupView) {
    super(
      `${groupRank(expected.to, group)}${inGroup(group)}: expected recv(${formatP2P(expected)}) from ${groupRank(expected.from, group)}, which sent ${formatP2P(got)}.`,
    );
  }
}

/** A peer did not send (or take) a message within the timeout. */
export class P2PTimeoutError extends Error {
  override readonly name = 'P2PTimeoutError';
  constructor(call: P2PCall, side: 'send' | 'recv', timeoutMs: number, group?: GroupView) {
    const [me, peer] = side === 'recv' ? [call.to, call.from] : [call.from, call.to];
    const what = side === 'recv' ? `recv(${formatP2P(call)}) from` : `send(${formatP2P(call)}) to`;
    const why = side === 'recv' ? 'did not send it' : 'did not take it';
    super(
      `${groupRank(me, group)}${inGroup(group)}: ${what} ${groupRank(peer, group)} timed out after ${timeoutMs} ms: ${groupRank(peer, group)} ${why}.`,
    );
  }
}
