// #slowlink=r:f on the MessagePort ring in this thread: rank r puts each chunk on the ring f times
// (f× the copies and bytes), its neighbours take the first copy, and every result is unchanged.
import { expect, test } from 'vitest';
import { hostTensor } from '../../../src/comm/host-tensor.ts';
import { makeGroup, randomArray } from './groups.ts';

const t = 4;
const shape = [8, 6];

async function runAll(linkFactor: number) {
  const g = makeGroup('message-port', t);
  try {
    g.comms[2]!.linkFactor = linkFactor;
    const xs = g.comms.map((_, r) => hostTensor(shape, randomArray(48, 10 + r)));
    const ar = await Promise.all(g.comms.map((c, r) => c.allReduce(xs[r]!)));
    const rs = await Promise.all(g.comms.map((c, r) => c.reduceScatter(xs[r]!, 0)));
    const ag = await Promise.all(g.comms.map((c, r) => c.allGather(xs[r]!, 1)));
    return { results: [ar, rs, ag].map((l) => l.map((x) => [...x.data])), copies: g.comms.map((c) => c.chunkCopies) };
  } finally {
    g.close();
  }
}

test('the hop out of rank 2 moves each chunk 3 times; the others once; all-reduce, reduce-scatter and all-gather unchanged', async () => {
  const once = await runAll(1);
  const slow = await runAll(3);
  expect(slow.results).toEqual(once.results);
  // Per rank: all-reduce 2(t − 1) ring steps, reduce-scatter and all-gather t − 1 each: 4(t − 1) = 12 chunks.
  expect(once.copies).toEqual([12, 12, 12, 12]);
  expect(slow.copies).toEqual([12, 12, 36, 12]);
});
