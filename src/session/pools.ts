/**
 * The one place rank pools are created (a dependency-cruiser rule, `rank-pools-from-session`,
 * holds every other module of src/ and scripts/ to a type-only import of ranks/pool.ts), and the
 * one way a pool is kept across degrees (LayerPoolKeeper).
 */
import type { CommPrograms } from '../ranks/comm-programs.ts';
import { RankPool, type PoolMesh, type RankWorkerHandle } from '../ranks/pool.ts';
import type { PoolTransport } from '../ranks/transport.ts';
import type { LayerWorkerPrograms, PoolLender } from './layer-run.ts';

/**
 * A pool of t rank workers serving the layer (src/ranks/layer.worker.ts); with `mesh`, a mesh of
 * N = tp·cp·dp·pp of them (`size` then N), the layer running on each TP group.
 */
export function createLayerPool(
  size: number,
  transport: 'auto' | PoolTransport = 'auto',
  timeoutMs = 30_000,
  mesh?: PoolMesh,
): Promise<RankPool<LayerWorkerPrograms>> {
  return RankPool.create<LayerWorkerPrograms>({
    size,
    ...(mesh && { mesh }),
    transport,
    timeoutMs,
    createWorker: (r) =>
      new Worker(new URL('../ranks/layer.worker.ts', import.meta.url), { type: 'module', name: `rank ${r}` }),
  });
}

/**
 * A pool of t rank workers serving only the collectives (src/ranks/rank.worker.ts, or in Node the
 * workers `createWorker` starts), with a shared ring of `commCapacityBytes` per rank (the comm
 * bench sizes it to its largest message); with `mesh`, a mesh of N of them (`size` then N).
 */
export function createCommPool(
  size: number,
  transport: 'auto' | PoolTransport,
  timeoutMs: number,
  commCapacityBytes: number,
  createWorker?: (rank: number) => RankWorkerHandle,
  mesh?: PoolMesh,
): Promise<RankPool<CommPrograms>> {
  return RankPool.create<CommPrograms>({
    size,
    ...(mesh && { mesh }),
    transport,
    timeoutMs,
    commCapacityBytes,
    createWorker,
  });
}

/**
 * One pool of layer rank workers, re-formed for each degree asked for: workers already started
 * keep their devices, compiled pipelines and tuned GEMM choices, so a change of t starts only the
 * ranks never started before; a pool broken by a failure is replaced. The page's runner and the
 * sweep keep theirs in one of these.
 */
export class LayerPoolKeeper implements PoolLender {
  private pool: RankPool<LayerWorkerPrograms> | undefined;

  /** The pool re-formed for degree t (started on first use); `say` hears when workers start. */
  async of(t: number, say: (line: string) => void = () => {}): Promise<RankPool<LayerWorkerPrograms>> {
    if (this.pool?.failure) await this.dispose();
    const workers = (n: number) => `${n} ${this.pool ? 'more ' : ''}rank worker${n > 1 ? 's' : ''}`;
    if (!this.pool) {
      say(`starting ${workers(t)}…`);
      this.pool = await createLayerPool(t);
    } else if (this.pool.size !== t) {
      const more = t - this.pool.capacity;
      if (more > 0) say(`starting ${workers(more)}…`);
      await this.pool.resize(t);
    }
    return this.pool;
  }

  async withPool<R>(t: number, fn: (pool: RankPool<LayerWorkerPrograms>) => Promise<R>): Promise<R> {
    return fn(await this.of(t));
  }

  /** The pool as it is now (undefined before the first use or after dispose). */
  get current(): RankPool<LayerWorkerPrograms> | undefined {
    return this.pool;
  }

  /** Terminates every rank worker; the next use starts a fresh pool. */
  async dispose(): Promise<void> {
    const p = this.pool;
    this.pool = undefined;
    await p?.dispose();
  }
}
