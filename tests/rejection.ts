/** The error `p` rejects with (with the per-rank `errors` of a RankRunError, if any); fails when `p` resolves. */
export async function rejectionOf(p: Promise<unknown>): Promise<Error & { errors?: readonly (Error | undefined)[] }> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a rejection, but the call resolved');
}
