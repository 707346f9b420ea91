// A panel's study in a Web Worker of its own: opened for one request of a LatestWins, terminated
// when the request settles or is superseded (a newer run, the element disconnected).
import type { LatestRequest } from '../../session/latest-wins.ts';

/**
 * Runs `work` on the worker `open()` starts, for `req`: `req`'s abort (a newer request, `drop`)
 * terminates the worker — its answer never comes, so nothing of it is painted — and so does the end
 * of `work`. `live()` is true while `req` is current and `work` has not ended: a progress callback
 * (a Comlink proxy, its own port) can arrive after the answer, and must then paint nothing.
 */
export async function inFreshWorker<T>(
  req: LatestRequest,
  open: () => Worker,
  work: (worker: Worker, live: () => boolean) => Promise<T>,
): Promise<T> {
  const worker = open();
  let ended = false;
  req.signal.addEventListener('abort', () => worker.terminate(), { once: true });
  try {
    return await work(worker, () => req.current && !ended);
  } finally {
    ended = true;
    worker.terminate();
  }
}
