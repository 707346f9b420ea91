import { RankPool, type RankPoolOptions } from '../../../src/ranks/pool.ts';
import type { faultPrograms } from './fault.worker.ts';

/** Deterministic values in [−1, 1): the project's seeded generator. */
export { randomArray } from '../../../src/reference/random.ts';

/** The pool transports a browser page can use. */
export const poolTransports = ['sab-ring', 'message-port'] as const;

/** A pool whose workers also serve the injected faults. */
export function faultPool(opts: Omit<RankPoolOptions, 'createWorker'>): Promise<RankPool<typeof faultPrograms>> {
  return RankPool.create<typeof faultPrograms>({
    ...opts,
    createWorker: () => new Worker(new URL('./fault.worker.ts', import.meta.url), { type: 'module' }),
  });
}

export { rejectionOf } from '../../rejection.ts';

/**
 * Pools kept for a test file, one per key (a transport and rank mesh): runs on the same mesh share one
 * pool's start and each device's first pipelines, as the page keeps its pools across runs. `dispose`
 * in the file's afterAll.
 */
export function keptPools<P extends { dispose(): Promise<unknown> }>(): {
  pool(key: string, start: () => Promise<P>): Promise<P>;
  dispose(): Promise<void>;
} {
  const pools = new Map<string, Promise<P>>();
  return {
    pool(key, start) {
      let p = pools.get(key);
      if (!p) pools.set(key, (p = start()));
      return p;
    },
    async dispose() {
      for (const p of pools.values()) await (await p).dispose();
    },
  };
}
