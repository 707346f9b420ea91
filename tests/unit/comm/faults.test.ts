import { describe, expect, test } from 'vitest';
import { hostTensor } from '../../../src/comm/host-tensor.ts';
import { makeGroup, nodeTransports, rejectionOf } from './groups.ts';

describe.each(nodeTransports)('faults over %s', (kind) => {
  test('ranks calling different collectives all fail with an error naming every rank and call', async () => {
    const g = makeGroup(kind, 3);
    const x = hostTensor([6, 2]);
    const errs = await Promise.all([
      rejectionOf(g.comms[0].reduceScatter(x, 0)),
      rejectionOf(g.comms[1].allGather(x, 0)),
      rejectionOf(g.comms[2].reduceScatter(x, 0)),
    ]);
    errs.forEach((e, r) => {
      expect(e.name).toBe('CollectiveMismatchError');
      expect(e.message).toBe(
        `rank ${r}: collective call differs across ranks: ranks 0, 2 called reduceScatter(dim 0, sum, f32 [6, 2]) #1; ` +
          'rank 1 called allGather(dim 0, f32 [6, 2]) #1.',
      );
    });
    g.close();
  });

  test('ranks exchanging different tensors on the ring fail with both calls named', async () => {
    const g = makeGroup(kind, 4);
    const x = hostTensor([2, 3]);
    const errs = await Promise.all(
      g.comms.map((c, r) => rejectionOf(c.ringExchange(x, r === 2 ? 'mlp.gather[3/4]' : 'mlp.gather[2/4]'))),
    );
    errs.forEach((e, r) => {
      expect(e.name).toBe('CollectiveMismatchError');
      expect(e.message).toBe(
        `rank ${r}: collective call differs across ranks: ranks 0, 1, 3 called ringExchange(f32 [2, 3]) of mlp.gather[2/4] #1; ` +
          'rank 2 called ringExchange(f32 [2, 3]) of mlp.gather[3/4] #1.',
      );
    });
    g.close();
  });

  test('ranks passing different shapes to allReduce fail with the shapes named', async () => {
    const g = makeGroup(kind, 2);
    const errs = await Promise.all([
      rejectionOf(g.comms[0].allReduce(hostTensor([4]))),
      rejectionOf(g.comms[1].allReduce(hostTensor([5]))),
    ]);
    errs.forEach((e) =>
      expect(e.message).toContain('rank 0 called allReduce(sum, f32 [4]) #1; rank 1 called allReduce(sum, f32 [5]) #1'),
    );
    g.close();
  });

  test('a rank that never arrives makes the others fail after the timeout, naming it', async () => {
    const g = makeGroup(kind, 4, 300);
    const t0 = Date.now();
    const errs = await Promise.all([0, 1, 3].map((r) => rejectionOf(g.comms[r].allReduce(hostTensor([8])))));
    expect(Date.now() - t0).toBeLessThan(3_000);
    errs.forEach((e) => {
      expect(e.name).toBe('CollectiveTimeoutError');
      expect(e.message).toMatch(
        /^rank [013]: allReduce\(sum, f32 \[8\]\) #1 timed out after 300 ms: rank 2 never arrived\.$/,
      );
    });
    g.close();
  });

  test('after a failure the communicator refuses further calls and says to rebuild', async () => {
    const g = makeGroup(kind, 2, 200);
    await rejectionOf(g.comms[0].barrier());
    const e = await rejectionOf(g.comms[0].barrier());
    expect(e.name).toBe('GroupBrokenError');
    expect(e.message).toContain(
      'rank 0: the communicator failed earlier (rank 0: barrier() #1 timed out after 200 ms: rank 1 never arrived.)',
    );
    g.close();
  });
});
