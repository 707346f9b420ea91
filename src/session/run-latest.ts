// The page's one run queue: the latest request wins; requests made while one runs coalesce; a stale run is aborted.

/** A queue where only the latest request matters (see runLatest). */
export interface LatestRuns<Req> {
  /**
   * Asks for `req`. Nothing runs twice at once: while a run is in flight, `req` waits as the one
   * pending request (replacing any earlier pending one); when its key differs from the running
   * request's, the running one's signal is aborted so it stops at its next check.
   */
  request(req: Req): void;
  /** Resolves once nothing runs and nothing is pending. */
  idle(): Promise<void>;
}

/** What runLatest needs: a key (requests with equal keys do the same work) and the work itself. */
export interface LatestRunsOptions<Req> {
  readonly key: (req: Req) => string;
  /** Does `req`; `signal` is aborted (reason: an AbortError) once a request with another key arrives. */
  readonly run: (req: Req, signal: AbortSignal) => Promise<void>;
  /** A run's failure that was not an abort (default: reported with console.error, the queue goes on). */
  readonly onError?: (e: unknown, req: Req) => void;
}

/**
 * A run queue that coalesces changes and aborts stale runs: `request` as often as the input
 * changes (every keystroke, every hash change); at most one run is in flight and at most one
 * waits, always the latest asked for.
 */
export function runLatest<Req>(opts: LatestRunsOptions<Req>): LatestRuns<Req> {
  let pending: { req: Req } | undefined;
  let current: { key: string; abort: AbortController } | undefined;
  let loop: Promise<void> | undefined;
  const onError = opts.onError ?? ((e: unknown) => console.error(e));

  const drain = async (): Promise<void> => {
    while (pending) {
      const { req } = pending;
      pending = undefined;
      const abort = new AbortController();
      current = { key: opts.key(req), abort };
      try {
        await opts.run(req, abort.signal);
      } catch (e) {
        if (!abort.signal.aborted) onError(e, req);
      } finally {
        current = undefined;
      }
    }
  };

  return {
    request(req: Req): void {
      pending = { req };
      if (current && current.key !== opts.key(req))
        current.abort.abort(new DOMException('a newer request replaced this run', 'AbortError'));
      if (!loop)
        loop = drain().finally(() => {
          loop = undefined;
        });
    },
    async idle(): Promise<void> {
      // A request made during the last run's finally starts a new loop: wait for that one too.
      for (let l = loop; l; l = loop) await l;
    },
  };
}
