/** A rank's worker raised an uncaught error, or could not start. */
export class RankFailedError extends Error {
  override readonly name = 'RankFailedError';
  constructor(
    readonly rank: number,
    detail: string,
  ) {
    // A detail that names the rank already ("rank 2: …", or in a mesh "rank 2 (tp 0, …) in …") keeps its own prefix.
    super(new RegExp(`^rank ${rank}[: ]`).test(detail) ? detail : `rank ${rank}: ${detail}`);
  }
}

/**
 * One or more ranks failed a pool call. `errors[r]` is rank r's error (undefined when it succeeded);
 * the message lists each failed rank's error on its own line.
 */
export class RankRunError extends Error {
  override readonly name = 'RankRunError';
  constructor(
    readonly what: string,
    readonly errors: readonly (Error | undefined)[],
  ) {
    const failed = errors.flatMap((e, r) => (e ? [r] : []));
    const lines = failed.map(
      (r) => `  ${errors[r]!.message.startsWith(`rank ${r}`) ? '' : `rank ${r}: `}${errors[r]!.message}`,
    );
    super(`${what} failed on ${failed.length === 1 ? 'rank' : 'ranks'} ${failed.join(', ')}:\n${lines.join('\n')}`);
  }
}

/** Errors a collective raises on its own on every rank involved; they need no abort of the others. */
export const collectiveErrorNames: ReadonlySet<string> = new Set([
  'CollectiveMismatchError',
  'CollectiveTimeoutError',
  'CollectiveAbortedError',
  'GroupBrokenError',
]);
