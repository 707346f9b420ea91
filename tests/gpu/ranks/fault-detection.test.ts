import { describe, expect, test } from 'vitest';
import type { CollectiveArgs } from '../../../src/ranks/comm-programs.ts';
import { faultPool, poolTransports, rejectionOf } from './helpers.ts';

const allReduce = (r: number): CollectiveArgs => ({
  op: 'allReduce',
  device: 'gpu',
  shape: [8],
  data: new Float32Array(8).fill(r),
});

describe.each(poolTransports)('fault detection over %s', (transport) => {
  test('a lost GPUDevice is reported at once by its rank, naming the device and why, and the peers are released', async () => {
    const pool = await faultPool({ size: 2, transport, timeoutMs: 30_000 });
    const t0 = performance.now();
    const [others, lost] = await Promise.allSettled([
      pool.run('collective', allReduce, [0]),
      pool.run('loseDevice', undefined, [1]),
    ]);
    const ms = performance.now() - t0;
    console.info(`${transport}: the lost device of rank 1 was reported ${ms.toFixed(0)} ms after the call`);
    expect(ms).toBeLessThan(5_000);
    expect((lost as PromiseRejectedResult).reason.message).toMatch(
      /^program "loseDevice" failed on rank 1:\n {2}rank 1: worker error: .*rank 1: its GPU device \(.+\) was lost: destroyed.*The next run requests a new device\./,
    );
    expect((others as PromiseRejectedResult).reason.message).toMatch(/rank 0: .*rank 1 failed: .*its GPU device/);
    await pool.dispose();
    const fresh = await faultPool({ size: 2, transport, timeoutMs: 1_000 });
    expect(await fresh.run('deviceCheck', undefined)).toEqual(['usable', 'usable']);
    await fresh.dispose();
  });

  // The pool's 1.5 s deadline applies to program calls; the ranks' start keeps its own (180 s), so a
  // start slowed by a busy machine is not taken for a hang. The message names the deadline that fired
  // (the collective timeout, 30 s, would name a peer instead).
  test('a call no rank answers fails at the pool deadline naming the ranks, and breaks the pool', async () => {
    const pool = await faultPool({ size: 2, transport, timeoutMs: 30_000, callDeadlineMs: 1_500 });
    const e = await rejectionOf(pool.run('hang', undefined));
    expect(e.message).toBe(
      'program "hang" failed on ranks 0, 1:\n' +
        '  rank 0: did not answer program "hang" within the pool\'s 1.5 s deadline.\n' +
        '  rank 1: did not answer program "hang" within the pool\'s 1.5 s deadline.',
    );
    expect(pool.failure).toBeDefined();
    await pool.dispose();
  });
});
