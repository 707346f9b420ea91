// Rank workers in Node: worker_threads running scripts/device/node-rank.worker.ts, each with its own Dawn
// GPUDevice, joined by the same RankPool, shared-memory ring and GPU collectives as in the page.
import { Worker } from 'node:worker_threads';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import type { RankWorkerHandle } from '../../src/ranks/pool.ts';

/**
 * Starts rank r's worker thread (the module `entry`, TypeScript or JavaScript) and adapts it to
 * what RankPool needs: a Comlink endpoint whose 'error' listeners hear the thread's uncaught error,
 * or its exit before the pool ended it.
 */
export function nodeRankWorker(
  rank: number,
  entry = new URL('./node-rank.worker.ts', import.meta.url),
): RankWorkerHandle {
  const w = new Worker(new URL('./node-rank-boot.mjs', import.meta.url), {
    workerData: { entry: entry.href },
    name: `rank ${rank}`,
  });
  // Comlink's adapter carries 'message' events alone (it listens for "message" whatever the type).
  const endpoint = nodeEndpoint(w);
  let ended = false;
  const listeners = {
    error: new Set<EventListenerOrEventListenerObject>(),
    messageerror: new Set<EventListenerOrEventListenerObject>(),
  };
  const raise = (type: keyof typeof listeners, message: string): void => {
    const ev = Object.assign(new Event(type, { cancelable: true }), { message });
    for (const l of listeners[type]) {
      if (typeof l === 'function') l(ev);
      else l.handleEvent(ev);
    }
  };
  w.on('error', (e: Error) => raise('error', e.message));
  w.on('messageerror', (e: Error) => raise('messageerror', e.message));
  w.on('exit', (code) => {
    if (!ended) raise('error', `its worker thread exited (code ${code}) before the pool ended it`);
  });
  const own = (type: string): type is keyof typeof listeners => type === 'error' || type === 'messageerror';
  return {
    postMessage: (message, transfer) => endpoint.postMessage(message, transfer),
    addEventListener: (type, listener) =>
      own(type) ? listeners[type].add(listener) : endpoint.addEventListener(type, listener),
    removeEventListener: (type, listener) =>
      own(type) ? listeners[type].delete(listener) : endpoint.removeEventListener(type, listener),
    terminate: () => {
      ended = true;
      void w.terminate();
    },
  };
}
