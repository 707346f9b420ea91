/**
 * The one place rank pools are created (a dependency-cruiser rule, `rank-pools-from-session`,
 * holds every other module of src/ and scripts/ to a type-only import of ranks/pool.ts).
 */
import type { CommPrograms } from '../ranks/comm-programs.ts';
import { RankPool } from '../ranks/pool.ts';
import type { PoolTransport } from '../ranks/transport.ts';
import type { LayerWorkerPrograms } from './layer-run.ts';

/** A pool of t rank workers serving the layer (src/ranks/layer.worker.ts). */
export function createLayerPool(
  size: number,
  transport: 'auto' | PoolTransport = 'auto',
  timeoutMs = 30_000,
): Promise<RankPool<LayerWorkerPrograms>> {
  return RankPool.create<LayerWorkerPrograms>({
    size,
    transport,
    timeoutMs,
    createWorker: (r) =>
      new Worker(new URL('../ranks/layer.worker.ts', import.meta.url), { type: 'module', name: `rank ${r}` }),
  });
}

/**
 * A pool of t rank workers serving only the collectives (src/ranks/rank.worker.ts), with a
 * shared ring of `commCapacityBytes` per rank (the comm bench sizes it to its largest message).
 */
export function createCommPool(
  size: number,
  transport: 'auto' | PoolTransport,
  timeoutMs: number,
  commCapacityBytes: number,
): Promise<RankPool<CommPrograms>> {
  return RankPool.create<CommPrograms>({ size, transport, timeoutMs, commCapacityBytes });
}
