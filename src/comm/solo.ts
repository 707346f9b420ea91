import type { Collectives } from './collectives.ts';

/** The communicator of one rank alone (t = 1): no collective is ever issued, so any call rejects, naming it. */
export function soloCollectives<T>(): Collectives<T> {
  const refuse = (what: string) => () => Promise.reject(new Error(`t = 1 issued ${what}`));
  return {
    rank: 0,
    size: 1,
    transport: 'in-process',
    allReduce: refuse('an all-reduce'),
    reduceScatter: refuse('a reduce-scatter'),
    allGather: refuse('an all-gather'),
    broadcast: refuse('a broadcast'),
    barrier: refuse('a barrier'),
    ringExchange: refuse('a ring exchange'),
    shard: async (x) => x,
  };
}
