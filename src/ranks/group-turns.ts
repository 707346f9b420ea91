import type { Collectives } from '../comm/collectives.ts';

/**
 * One rank's collectives over several of its groups (e.g. TP inside the layer, DP for its
 * gradient buckets), taken in turns: a call starts once every call issued before it in another
 * group has finished; calls of one group keep their own order and may be in flight together.
 *
 * Why: the shared-memory ring blocks its worker's thread while it moves (Atomics.wait), so a rank
 * inside its DP ring cannot reach its TP ring. Two ranks that entered their groups in different
 * orders (their read-backs finished in different orders) would wait on each other until the
 * timeout: rank 0 in DP waiting for rank 2, rank 2 in TP waiting for rank 3, rank 3 in DP waiting
 * for rank 1, rank 1 in TP waiting for rank 0. Every rank issues its calls in the same program
 * order, so taking them in issue order across groups leaves no such cycle. On a GPU, NCCL runs
 * each group's kernels on streams of their own; here one thread moves one ring at a time.
 */
export class GroupTurns {
  private inFlight: { readonly group: string; readonly done: Promise<unknown> }[] = [];
  /** The call last issued in each group, started (so a group's calls start in issue order). */
  private lastStarted = new Map<string, Promise<unknown>>();

  /** Runs `start` once every earlier call of the other groups has settled; registers it at once. */
  run<R>(group: string, start: () => Promise<R>): Promise<R> {
    const before = this.inFlight.filter((c) => c.group !== group).map((c) => c.done);
    const previous = this.lastStarted.get(group) ?? Promise.resolve();
    let began!: () => void;
    const started = new Promise<void>((r) => (began = r));
    this.lastStarted.set(group, started);
    const result = Promise.all([...before.map((p) => p.catch(() => {})), previous]).then(() => {
      began();
      return start();
    });
    const entry = { group, done: result.catch(() => {}) };
    this.inFlight.push(entry);
    void entry.done.then(() => (this.inFlight = this.inFlight.filter((c) => c !== entry)));
    return result;
  }

  /** `comm` with every call taken in turns under `group`. */
  around<T, O>(group: string, comm: Collectives<T, O>): Collectives<T, O> {
    const turn = <R>(start: () => Promise<R>) => this.run(group, start);
    return {
      rank: comm.rank,
      size: comm.size,
      transport: comm.transport,
      allReduce: (x, op, tensor, out) => turn(() => comm.allReduce(x, op, tensor, out)),
      reduceScatter: (x, dim, op, tensor, out) => turn(() => comm.reduceScatter(x, dim, op, tensor, out)),
      allGather: (x, dim, tensor, out) => turn(() => comm.allGather(x, dim, tensor, out)),
      broadcast: (x, root, tensor, out) => turn(() => comm.broadcast(x, root, tensor, out)),
      ringExchange: (x, tensor, out) => turn(() => comm.ringExchange(x, tensor, out)),
      barrier: () => turn(() => comm.barrier()),
      shard: (x, dim) => comm.shard(x, dim),
    };
  }
}
