import * as Comlink from 'comlink';
import { abortSabRing, createSabRing, type SabRing } from '../comm/sab-layout.ts';
import { createPortMesh } from '../comm/port-ring.ts';
import type { TraceEvent } from '../core/trace-event.ts';
import type { CommPrograms } from './comm-programs.ts';
import type { ProgramArgs, ProgramResult, RankGroupInit, RankInfo, RankPrograms } from './context.ts';
import { assignGroups, rankName } from '../mesh/process-group.ts';
import {
  expertKinds,
  groupKinds,
  rankMesh,
  type GroupKind,
  type MeshDegrees,
  type RankMesh,
  type RankOrder,
} from '../mesh/rank-layout.ts';
import { collectiveErrorNames, RankFailedError, RankRunError } from './errors.ts';
import type { RankWorker } from './serve.ts';
import { chooseTransport, type PoolTransport } from './transport.ts';
import { maxTp } from '../parallel/validate.ts';

/**
 * A mesh of N = tp·cp·dp·pp ranks laid out as Megatron-Core does (mesh/rank-layout.ts), each rank
 * wired into its group of every kind in `groups` (default: the dense kinds tp, cp, dp, pp, dp-cp,
 * and the expert kinds etp, ep, edp when ep > 1 or etp ≠ tp), each group a ring of its own.
 */
export interface PoolMesh {
  readonly degrees: Partial<MeshDegrees>;
  readonly order?: RankOrder;
  readonly groups?: readonly GroupKind[];
}

/** How to build a pool of tensor-parallel ranks. */
export interface RankPoolOptions {
  /** TP degree t, 1…maxTp (16): one TP group of t ranks. Give this or `mesh`. */
  readonly size?: number;
  /** A mesh of ranks instead of one TP group (`size`, if given, must be its rank count). */
  readonly mesh?: PoolMesh;
  /** Shared-ring bytes per point-to-point message, per ordered pair of a group (default min(commCapacityBytes, 1 MiB)). */
  readonly p2pCapacityBytes?: number;
  /** 'auto' (default): the shared-memory ring when the page is cross-origin isolated, else MessagePort. */
  readonly transport?: 'auto' | PoolTransport;
  /** A collective fails when a peer is this late (ms, default 10 000). */
  readonly timeoutMs?: number;
  /** Shared-ring bytes per rank: the largest full tensor one collective moves (default 64 MiB). */
  readonly commCapacityBytes?: number;
  /**
   * Every program call fails on the ranks that have not answered after this long (ms, default
   * 180 000: the longest calls, GEMM tuning of a large layer on SwiftShader, take tens of seconds),
   * naming them; the pool is then broken. A hung worker therefore never holds a caller forever.
   */
  readonly callDeadlineMs?: number;
  /**
   * The same for starting the ranks (`init`: the worker's module, its life lock, its GPUDevice and
   * the transport; ms, default 180 000, never below callDeadlineMs). Apart from callDeadlineMs so
   * that a short program deadline does not fail a start slowed by a busy machine.
   */
  readonly startDeadlineMs?: number;
  /** Starts rank r's worker; default: src/ranks/rank.worker.ts (serves `commPrograms`). */
  readonly createWorker?: (rank: number) => RankWorkerHandle;
}

/**
 * What the pool needs of a rank's worker: a Comlink endpoint that raises 'error' (with a
 * `message`) when the worker fails to load or crashes, and that can be ended. A page's `Worker`
 * is one; in Node, an adapter of a worker_threads Worker (scripts/device/node-ranks.ts).
 */
export interface RankWorkerHandle extends Comlink.Endpoint {
  terminate(): void;
}

/** What dispose reports: each rank's device-lost reason ('destroyed' when torn down cleanly). */
export interface DisposeReport {
  readonly deviceLost: readonly string[];
}

/** `t` if it is a legal pool size, else an error saying which sizes are. */
function checkSize(t: number): number {
  if (!Number.isInteger(t) || t < 1 || t > maxTp)
    throw new Error(`RankPool: size ${t} must be an integer from 1 to ${maxTp}.`);
  return t;
}

/** The pool's ranks laid out, the kinds wired, and whether errors name groups (a mesh) or not (one TP group). */
interface PoolLayout {
  readonly mesh: RankMesh;
  readonly kinds: readonly GroupKind[];
  readonly isMesh: boolean;
}

/** One TP group of t ranks. */
function plainLayout(t: number): PoolLayout {
  return { mesh: rankMesh({ tp: checkSize(t) }), kinds: ['tp'], isMesh: false };
}

function layoutOf(opts: RankPoolOptions): PoolLayout {
  if (!opts.mesh) {
    if (opts.size === undefined) throw new Error('RankPool: give size (one TP group of that many ranks) or mesh.');
    return plainLayout(opts.size);
  }
  const mesh = rankMesh(opts.mesh.degrees, opts.mesh.order);
  if (opts.size !== undefined && opts.size !== mesh.world)
    throw new Error(
      `RankPool: size ${opts.size} but the mesh has ${mesh.world} ranks; leave size out or give ${mesh.world}.`,
    );
  const d = mesh.spec.degrees;
  const experts = d.ep > 1 || d.etp !== d.tp;
  const kinds = opts.mesh.groups ?? groupKinds.filter((k) => experts || !expertKinds.has(k));
  if (!kinds.includes('tp')) throw new Error("RankPool: a mesh's groups must include tp (the layer's group).");
  return { mesh, kinds, isMesh: true };
}

const defaultWorker = (): Worker =>
  new Worker(new URL('./rank.worker.ts', import.meta.url), { type: 'module', name: 'rank' });

/**
 * t rank workers, each with its own GPUDevice, joined by one collective group. `run` calls a named
 * program on every rank (or some) and resolves with the results in rank order; any failure rejects
 * with a RankRunError naming each failed rank, within timeoutMs plus a short grace, and leaves the
 * pool broken: dispose it and create a new one.
 */
export class RankPool<P extends RankPrograms = CommPrograms> {
  readonly transport: PoolTransport;
  readonly timeoutMs: number;
  readonly callDeadlineMs: number;
  readonly startDeadlineMs: number;
  private layout: PoolLayout;
  private readonly workers: RankWorkerHandle[] = [];
  private readonly remotes: Comlink.Remote<RankWorker>[] = [];
  private readonly make: (rank: number) => RankWorkerHandle;
  private readonly commCapacityBytes: number;
  private readonly p2pCapacityBytes: number | undefined;
  /** The shared memory of every group (aborted together when a rank fails). */
  private rings: SabRing[] = [];
  private infos: RankInfo[] = [];
  private broken: Error | undefined;
  private disposed = false;
  private readonly onBreak = new Set<(rank: number, e: Error) => void>();
  /** Cancels the main thread's wait on each worker's life lock (see watch). */
  private readonly unwatch = new AbortController();
  /** Per worker: settles once it holds its life lock and the main thread waits on it (see watch). */
  private readonly lifeLocks: Promise<void>[] = [];

  private constructor(opts: RankPoolOptions) {
    this.layout = layoutOf(opts);
    this.transport = chooseTransport(opts.transport);
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.callDeadlineMs = opts.callDeadlineMs ?? 180_000;
    this.startDeadlineMs = Math.max(this.callDeadlineMs, opts.startDeadlineMs ?? 180_000);
    this.commCapacityBytes = opts.commCapacityBytes ?? 64 << 20;
    this.p2pCapacityBytes = opts.p2pCapacityBytes;
    this.make = opts.createWorker ?? defaultWorker;
    for (let r = 0; r < this.size; r++) this.spawn(r);
  }

  /** Starts t workers, each requesting its adapter and device, and wires the group. */
  static async create<P extends RankPrograms = CommPrograms>(opts: RankPoolOptions): Promise<RankPool<P>> {
    const pool = new RankPool<P>(opts);
    try {
      await pool.join();
    } catch (e) {
      await pool.dispose();
      throw e;
    }
    return pool;
  }

  /** The ranks: the TP degree t of a plain pool (ranks 0…t−1 form the group), N of a mesh. */
  get size(): number {
    return this.layout.mesh.world;
  }

  /** The mesh the ranks form (a plain pool's: tp = t). */
  get mesh(): RankMesh {
    return this.layout.mesh;
  }

  /** Workers started, each holding its device: the largest degree `resize` reaches without starting more. */
  get capacity(): number {
    return this.workers.length;
  }

  /**
   * Re-forms the group with `t` ranks: rank r is the pool's r-th worker, started only if it is new;
   * the others keep their device and compiled pipelines, so growing from t to t′ starts t′ − t
   * workers and shrinking starts none. Workers beyond t idle (devices kept) until a later resize.
   */
  async resize(t: number): Promise<void> {
    checkSize(t);
    const unusable = this.unusable('resize');
    if (unusable) throw unusable;
    if (t === this.size && !this.layout.isMesh) return;
    for (let r = this.workers.length; r < t; r++) this.spawn(r);
    this.layout = plainLayout(t);
    await this.join();
  }

  /** Starts worker r and watches it. */
  private spawn(r: number): void {
    const w = this.make(r);
    w.addEventListener('error', (ev: Event) => {
      ev.preventDefault();
      const message = (ev as Partial<ErrorEvent>).message;
      this.breakWith(r, new RankFailedError(r, `worker error: ${message || 'the worker failed to load or crashed'}`));
    });
    w.addEventListener('messageerror', () =>
      this.breakWith(r, new RankFailedError(r, 'a message from the worker could not be deserialized')),
    );
    this.workers.push(w);
    const remote = Comlink.wrap<RankWorker>(w);
    this.remotes.push(remote);
    this.lifeLocks.push(this.watch(r, remote));
  }

  /**
   * Notices at once when worker r ends (self.close(), a crash, the tab's process killing it): the
   * worker holds a Web Lock for its whole life and the browser releases it when the worker ends, so
   * the main thread's request for the same lock is granted exactly then. (A heartbeat cannot do
   * this: a healthy rank blocked in Atomics.wait on a slow peer cannot answer one.) The returned
   * promise settles once the worker holds the lock and the main thread's request is queued behind
   * it; `join` waits for it before the worker's first call, so no program runs on a worker whose
   * end would go unnoticed (a worker that closed before its lock request was granted never held the
   * lock, and its death was then seen only through the peers' collective timeout plus the grace).
   */
  private watch(r: number, remote: Comlink.Remote<RankWorker>): Promise<void> {
    const locks = (globalThis.navigator as Navigator | undefined)?.locks;
    if (!locks) return Promise.resolve();
    const name = `tp-rank-${crypto.randomUUID()}`;
    return remote.holdLifeLock(name).then(
      () => {
        locks
          .request(name, { signal: this.unwatch.signal }, () => {
            if (!this.disposed)
              this.breakWith(r, new RankFailedError(r, 'its worker closed or died (its life lock was released).'));
          })
          .catch(() => {}); // the pool was disposed
      },
      () => {}, // the worker could not take a lock: its error event or the call deadline reports a death
    );
  }

  /**
   * Wires ranks 0…N−1 into their groups, each over fresh shared memory or ports of its own (a
   * mesh's one-rank groups move nothing and get neither); a new device only where a worker has none.
   */
  private async join(): Promise<void> {
    const { mesh, kinds, isMesh } = this.layout;
    this.rings = [];
    const held = assignGroups(mesh, kinds, (view): RankGroupInit[] => {
      const size = view.members.length;
      const base = { kind: view.kind, size, ...(isMesh && { view }) };
      if (isMesh && size === 1) return [{ ...base, rank: 0, transport: { kind: 'solo' } }];
      if (this.transport === 'message-port')
        return createPortMesh(size).map((ports, rank) => ({
          ...base,
          rank,
          transport: { kind: 'message-port', ports },
        }));
      const ring = createSabRing(size, this.commCapacityBytes, this.p2pCapacityBytes);
      this.rings.push(ring);
      return view.members.map((_, rank) => ({ ...base, rank, transport: { kind: 'sab-ring', ring } }));
    });
    this.infos = await this.callAll(
      'init',
      [...Array(this.size).keys()],
      this.startDeadlineMs,
      async (remote, rank) => {
        await this.lifeLocks[rank];
        const groups = [...held[rank]!.values()].map((g) => g.value);
        const ports = groups.flatMap((g) =>
          g.transport.kind === 'message-port' ? g.transport.ports.filter((p): p is MessagePort => !!p) : [],
        );
        const cfg = { rank, mesh: mesh.spec, timeoutMs: this.timeoutMs, groups };
        return remote.init(ports.length ? Comlink.transfer(cfg, ports) : cfg);
      },
    );
  }

  /** Adapter line of each rank, e.g. "google swiftshader". */
  get adapters(): readonly string[] {
    return this.infos.map((i) => i.adapter);
  }

  /** The error that broke the pool, if any. */
  get failure(): Error | undefined {
    return this.broken;
  }

  /**
   * Runs `program` on `ranks` (default all) with `args`, or `args(rank)` per rank; results in rank
   * order of `ranks`.
   */
  run<K extends keyof P & string>(
    program: K,
    args: ProgramArgs<P[K]> | ((rank: number) => ProgramArgs<P[K]>),
    ranks: readonly number[] = [...Array(this.size).keys()],
  ): Promise<ProgramResult<P[K]>[]> {
    const argsOf = (r: number): unknown => (typeof args === 'function' ? (args as (rank: number) => unknown)(r) : args);
    return this.callAll(
      `program "${program}"`,
      ranks,
      this.callDeadlineMs,
      (remote, r) => remote.run(program, argsOf(r)) as Promise<ProgramResult<P[K]>>,
    );
  }

  /** Drains every rank's trace events, merged and sorted by start time. */
  async traces(): Promise<TraceEvent[]> {
    const all = await this.callAll('drainTrace', [...Array(this.size).keys()], this.callDeadlineMs, (remote) =>
      remote.drainTrace(),
    );
    return all.flat().sort((a, b) => a.t0 - b.t0 || a.rank - b.rank);
  }

  /** Destroys every device, terminates every worker (idle ones too); safe on a broken pool and to call twice. */
  async dispose(): Promise<DisposeReport> {
    if (this.disposed) return { deviceLost: [] };
    this.disposed = true;
    this.unwatch.abort();
    this.rings.forEach((ring) => abortSabRing(ring, -1, 'the pool was disposed'));
    const answer = <T>(p: Promise<T>, ms: number): Promise<T | 'unresponsive'> =>
      Promise.race([p, new Promise<'unresponsive'>((res) => setTimeout(() => res('unresponsive'), ms))]);
    const deviceLost = await Promise.all(
      this.remotes.map((r) => answer(r.dispose(), 1_000).catch((e: Error) => `dispose failed: ${e.message}`)),
    );
    this.remotes.forEach((r) => r[Comlink.releaseProxy]());
    this.workers.forEach((w) => w.terminate());
    return { deviceLost };
  }

  /**
   * Marks the pool broken and tells every pending call; `abortOthers` also wakes the ranks blocked
   * on the group (not needed for collective errors, which every rank raises itself).
   */
  private breakWith(rank: number, e: Error, abortOthers = true): void {
    if (!this.broken) {
      this.broken = e;
      const reason = e.message.replace(/^rank \d+: /, '');
      // In a mesh the failed rank is named by its coordinates (the ring's abort code carries its global rank).
      const who = this.layout.isMesh ? rankName(this.layout.mesh.spec, rank) : `rank ${rank}`;
      if (abortOthers && this.rings.length) this.rings.forEach((ring) => abortSabRing(ring, rank + 1, reason));
      if (abortOthers && this.transport === 'message-port')
        this.remotes.forEach((r, q) => q !== rank && r.abort(`${who} failed: ${reason}`).catch(() => {}));
    }
    this.onBreak.forEach((f) => f(rank, e));
  }

  /** Why the pool cannot do `what` (disposed, or broken by a failure), or undefined when it can. */
  private unusable(what: string): Error | undefined {
    if (this.disposed) return new Error(`RankPool: ${what} on a disposed pool.`);
    if (this.broken) return new Error(`RankPool is broken (${this.broken.message}); dispose it and create a new one.`);
    return undefined;
  }

  /**
   * Calls `fn` on each of `ranks`; resolves when all succeed. A worker error fails that rank's call at
   * once; after the first failure the other ranks get timeoutMs + 2 s to answer, then count as dead.
   */
  private callAll<R>(
    what: string,
    ranks: readonly number[],
    deadlineMs: number,
    fn: (remote: Comlink.Remote<RankWorker>, rank: number) => Promise<R>,
  ): Promise<R[]> {
    const unusable = this.unusable(what);
    if (unusable) return Promise.reject(unusable);
    return new Promise((resolve, reject) => {
      const results: R[] = new Array(ranks.length);
      const errors: (Error | undefined)[] = new Array(this.workers.length).fill(undefined);
      const settled = new Set<number>();
      let grace: ReturnType<typeof setTimeout> | undefined;
      const waitMs = this.timeoutMs + 2_000;
      const deadline = setTimeout(() => {
        ranks.forEach((r, j) => {
          if (settled.has(j)) return;
          const e = new RankFailedError(r, `did not answer ${what} within the pool's ${deadlineMs / 1000} s deadline.`);
          settle(j, { error: e });
          this.breakWith(r, e);
        });
      }, deadlineMs);
      const finish = (): void => {
        clearTimeout(deadline);
        clearTimeout(grace);
        this.onBreak.delete(onBreak);
        if (errors.some((e) => e)) reject(new RankRunError(what, errors));
        else resolve(results);
      };
      const settle = (i: number, outcome: { value: R } | { error: Error }): void => {
        if (settled.has(i)) return;
        settled.add(i);
        if ('value' in outcome) results[i] = outcome.value;
        else {
          errors[ranks[i]] = outcome.error;
          startGrace();
        }
        if (settled.size === ranks.length) finish();
      };
      const startGrace = (): void => {
        grace ??= setTimeout(() => {
          ranks.forEach((r, j) =>
            settle(j, {
              error: new RankFailedError(
                r,
                `did not answer within ${waitMs} ms after the first failure (its worker died or hangs).`,
              ),
            }),
          );
        }, waitMs);
      };
      const onBreak = (rank: number, e: Error): void => {
        const i = ranks.indexOf(rank);
        if (i >= 0 && e instanceof RankFailedError) settle(i, { error: e });
        startGrace();
      };
      this.onBreak.add(onBreak);
      ranks.forEach((r, i) => {
        fn(this.remotes[r], r).then(
          (value) => settle(i, { value }),
          (e: unknown) => {
            const err = e instanceof Error ? e : new Error(String(e));
            settle(i, { error: err });
            if (collectiveErrorNames.has(err.name)) this.breakWith(r, err, false);
            else this.breakWith(r, new RankFailedError(r, err.message));
          },
        );
      });
    });
  }
}
