import { formatCall, type CollectiveCall } from './call.ts';

function listRanks(ranks: readonly number[]): string {
  return `${ranks.length === 1 ? 'rank' : 'ranks'} ${ranks.join(', ')}`;
}

/** Ranks made different calls at the same point: names every distinct call and who made it. */
export class CollectiveMismatchError extends Error {
  override readonly name = 'CollectiveMismatchError';
  constructor(
    readonly rank: number,
    readonly calls: readonly CollectiveCall[],
  ) {
    const groups = new Map<string, number[]>();
    calls.forEach((c, r) => {
      const key = formatCall(c);
      groups.set(key, [...(groups.get(key) ?? []), r]);
    });
    const what = [...groups].map(([call, ranks]) => `${listRanks(ranks)} called ${call}`).join('; ');
    super(`rank ${rank}: collective call differs across ranks: ${what}.`);
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
  ) {
    const why = stage === 'arrival' ? 'never arrived' : 'stopped during the transfer';
    super(`rank ${rank}: ${formatCall(call)} timed out after ${timeoutMs} ms: ${listRanks(missing)} ${why}.`);
  }
}

/** The group was aborted (another rank or the pool failed) while this rank waited. */
export class CollectiveAbortedError extends Error {
  override readonly name = 'CollectiveAbortedError';
  constructor(
    readonly rank: number,
    readonly call: CollectiveCall | undefined,
    readonly reason: string,
  ) {
    super(`rank ${rank}: ${call ? formatCall(call) : 'collective'} aborted: ${reason}.`);
  }
}

/** A communicator refuses calls after any failure: the group must be rebuilt. */
export class GroupBrokenError extends Error {
  override readonly name = 'GroupBrokenError';
  constructor(rank: number, cause: string) {
    super(`rank ${rank}: the communicator failed earlier (${cause}); dispose the pool and build a new one.`);
  }
}
