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
