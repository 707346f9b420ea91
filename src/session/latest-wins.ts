// "Latest request wins" for one element's own async work (a load, a projection, a sweep, an
// animation): each request supersedes the one before, and a superseded request's result, failure
// and progress never reach the element. The page's runs, which must not overlap, queue in
// run-latest.ts instead; requests here may overlap, only their paints may not.

/** One request of a LatestWins. */
export interface LatestRequest {
  /** Aborted when a newer request starts, on `drop` and on `cancel`. */
  readonly signal: AbortSignal;
  /** True until a newer request starts or the request is dropped: only a current request may paint. */
  readonly current: boolean;
}

/** A request's work and what it paints; `done`, `failed` and `settled` are called only while it is current. */
export interface LatestPaint<T> {
  /** The work. Progress it shows is guarded with `req.current`; `req.signal.throwIfAborted()` stops a superseded one early. */
  readonly work: (req: LatestRequest) => Promise<T>;
  /** Shows the result. */
  readonly done: (value: T) => void;
  /** Shows a failure; a `cancel` of this request arrives here with `req.signal.aborted` set. */
  readonly failed: (e: unknown, req: LatestRequest) => void;
  /** After `done` or `failed`. */
  readonly settled?: () => void;
}

/** The reason a superseded request's signal carries. */
const superseded = (): DOMException => new DOMException('a newer request replaced this one', 'AbortError');

/**
 * Each `start` (or `run`) supersedes the request before it: the old request's `current` turns
 * false and its signal aborts, so nothing it resolves to — early or late — is painted.
 */
export class LatestWins {
  #latest: { readonly abort: AbortController; current: boolean } | undefined;

  /** A new current request; the previous one is superseded. */
  start(): LatestRequest {
    this.drop(superseded());
    const live = { abort: new AbortController(), current: true };
    this.#latest = live;
    return {
      signal: live.abort.signal,
      get current() {
        return live.current;
      },
    };
  }

  /** Runs `p.work` as the new current request and paints its outcome only if no newer request started meanwhile. */
  async run<T>(p: LatestPaint<T>): Promise<void> {
    const req = this.start();
    let value: T;
    try {
      value = await p.work(req);
    } catch (e) {
      if (!req.current) return;
      p.failed(e, req);
      p.settled?.();
      return;
    }
    if (!req.current) return;
    p.done(value);
    p.settled?.();
  }

  /** Aborts the current request's signal; it stays current, so its failure (a cancel) is painted. */
  cancel(reason: unknown): void {
    this.#latest?.abort.abort(reason);
  }

  /** Supersedes the current request without starting one (the element was disconnected, its input replaced). */
  drop(reason: unknown = superseded()): void {
    const live = this.#latest;
    if (!live) return;
    live.current = false;
    live.abort.abort(reason);
    this.#latest = undefined;
  }
}
