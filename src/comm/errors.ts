import type { GroupView } from '../mesh/process-group.ts';
import { formatCall, sameCall, splitMismatches, type CollectiveCall } from './call.ts';
import { groupRank, inGroup } from './p2p.ts';

// Ranks are group ranks; in a mesh group (`group` given) each is named by its global rank and
// coordinates, and the group by its kind, index and members.

function listRanks(ranks: readonly number[], group: GroupView | undefined): string {
  if (group) return ranks.map((r) => groupRank(r, group)).join(', ');
  return `${ranks.length === 1 ? 'rank' : 'ranks'} ${ranks.join(', ')}`;
}

/**
 * What differs between the calls every rank of a group made (index = group rank): every distinct
 * call and who made it; or, for all-to-all calls that agree but for their splits, every pair of
 * ranks whose splits disagree.
 */
function callDifference(rank: number, calls: readonly CollectiveCall[], group: GroupView | undefined): string {
  const pairs = calls.every((c) => sameCall(c, calls[0]!)) ? splitMismatches(calls) : [];
  if (pairs.length) {
    const { splits: _, ...call } = calls[rank]!;
    const who = (r: number): string => groupRank(r, group);
    const what = pairs.map((p) => `${who(p.from)} sends ${p.sends} rows to ${who(p.to)}, which expects ${p.expects}`);
    return `${formatCall(call)}: splits differ across ranks: ${what.join('; ')}`;
  }
  const groups = new Map<string, number[]>();
  calls.forEach((c, r) => {
    const key = formatCall(c);
    groups.set(key, [...(groups.get(key) ?? []), r]);
  });
  const what = [...groups].map(([call, ranks]) => `${listRanks(ranks, group)} called ${call}`).join('; ');
  return `collective call differs across ranks: ${what}`;
}

/** Ranks made different calls at the same point (or an all-to-all's splits disagree): see callDifference. */
export class CollectiveMismatchError extends Error {
  override readonly name = 'CollectiveMismatchError';
  constructor(
    readonly rank: number,
    readonly calls: readonly CollectiveCall[],
    group?: GroupView,
  ) {
    super(`${groupRank(rank, group)}${inGroup(group)}: ${callDifference(rank, calls, group)}.`);
  }
}

/** Some ranks did not arrive (or stopped mid-transfer) within the timeout. */
export class CollectiveTimeoutError extends Error {
  override readonly name = 'CollectiveTimeoutError';
  constructor(
    readonly rank: number,
    readonly call: CollectiveCall,
    readonly missing: readonly number[],
    readonly timeoutMs: number,
    stage: 'arrival' | 'transfer',
    group?: GroupView,
  ) {
    const why = stage === 'arrival' ? 'never arrived' : 'stopped during the transfer';
    super(
      `${groupRank(rank, group)}${inGroup(group)}: ${formatCall(call)} timed out after ${timeoutMs} ms: ${listRanks(missing, group)} ${why}.`,
    );
  }
}

/** The group was aborted (another rank or the pool failed) while this rank waited. */
export class CollectiveAbortedError extends Error {
  override readonly name = 'CollectiveAbortedError';
  constructor(
    readonly rank: number,
    readonly call: CollectiveCall | undefined,
    readonly reason: string,
    group?: GroupView,
  ) {
    // Without a call: whatever this rank was waiting on in the group (a collective or a point-to-point message).
    const what = call ? formatCall(call) : 'communication';
    super(`${groupRank(rank, group)}${inGroup(group)}: ${what} aborted: ${reason.replace(/\.$/, '')}.`);
  }
}

/** A communicator refuses calls after any failure: the group must be rebuilt. */
export class GroupBrokenError extends Error {
  override readonly name = 'GroupBrokenError';
  constructor(rank: number, cause: string, group?: GroupView) {
    super(
      `${groupRank(rank, group)}${inGroup(group)}: the communicator failed earlier (${cause}); dispose the pool and build a new one.`,
    );
  }
}
