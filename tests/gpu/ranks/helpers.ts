import { RankPool, type RankPoolOptions } from '../../../src/ranks/pool.ts';
import type { faultPrograms } from './fault.worker.ts';

/** Deterministic values in [−1, 1) (xorshift32). */
export function randomArray(n: number, seed: number): Float32Array {
  let s = (seed * 2654435761) >>> 0 || 1;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    out[i] = s / 2 ** 31 - 1;
  }
  return out;
}

/** The pool transports a browser page can use. */
export const poolTransports = ['sab-ring', 'message-port'] as const;

/** A pool whose workers also serve the injected faults. */
export function faultPool(opts: Omit<RankPoolOptions, 'createWorker'>): Promise<RankPool<typeof faultPrograms>> {
  return RankPool.create<typeof faultPrograms>({
    ...opts,
    createWorker: () => new Worker(new URL('./fault.worker.ts', import.meta.url), { type: 'module' }),
  });
}

/** Rejection of `p` (fails when p resolves). */
export async function rejectionOf(p: Promise<unknown>): Promise<Error & { errors?: readonly (Error | undefined)[] }> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a rejection, but the call resolved');
}
