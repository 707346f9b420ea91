import { describe, expect, test } from 'vitest';
import type { CollectiveArgs } from '../../../src/ranks/comm-programs.ts';
import { faultPool, poolTransports, rejectionOf } from './helpers.ts';

const timeoutMs = 1_000;
const allReduce = (r: number): CollectiveArgs => ({
  op: 'allReduce',
  device: 'gpu',
  shape: [8],
  data: new Float32Array(8).fill(r),
});

/** A healthy pool of the same kind works after the broken one is disposed. */
async function rebuildWorks(size: number, transport: (typeof poolTransports)[number]): Promise<void> {
  const pool = await faultPool({ size, transport, timeoutMs });
  const ys = await pool.run('collective', allReduce);
  ys.forEach((y) => expect(Array.from(y.data)).toEqual(new Array(8).fill((size * (size - 1)) / 2)));
  expect((await pool.dispose()).deviceLost).toEqual(new Array(size).fill('destroyed'));
}

describe.each(poolTransports)('faults across rank workers over %s', (transport) => {
  test('ranks calling different collectives all fail, each error naming every rank and its call', async () => {
    const pool = await faultPool({ size: 3, transport, timeoutMs });
    const e = await rejectionOf(
      pool.run(
        'collective',
        (r): CollectiveArgs => ({
          op: r === 1 ? 'allGather' : 'reduceScatter',
          device: 'gpu',
          shape: [6, 2],
          dim: 0,
          data: new Float32Array(12),
        }),
      ),
    );
    expect(e.name).toBe('RankRunError');
    e.errors!.forEach((err, r) =>
      expect(err!.message).toBe(
        `rank ${r}: collective call differs across ranks: ranks 0, 2 called reduceScatter(dim 0, sum, f32 [6, 2]) #1; rank 1 called allGather(dim 0, f32 [6, 2]) #1.`,
      ),
    );
    await pool.dispose();
    await rebuildWorks(3, transport);
  });

  test('a rank that never arrives makes the others time out with an error naming it', async () => {
    const pool = await faultPool({ size: 4, transport, timeoutMs });
    const t0 = performance.now();
    const [others, skipper] = await Promise.allSettled([
      pool.run('collective', allReduce, [0, 1, 3]),
      pool.run('skip', undefined, [2]),
    ]);
    expect(performance.now() - t0).toBeLessThan(timeoutMs + 3_000);
    expect(skipper).toEqual({ status: 'fulfilled', value: ['skipped'] });
    expect(others.status).toBe('rejected');
    const e = (others as PromiseRejectedResult).reason as Error & { errors: Error[] };
    [0, 1, 3].forEach((r) =>
      expect(e.errors[r].message).toBe(
        `rank ${r}: allReduce(sum, f32 [8]) #1 timed out after ${timeoutMs} ms: rank 2 never arrived.`,
      ),
    );
    await pool.dispose();
    await rebuildWorks(4, transport);
  });

  test('a worker that throws an uncaught error surfaces it on the main thread and aborts its peers', async () => {
    const pool = await faultPool({ size: 4, transport, timeoutMs: 30_000 });
    const t0 = performance.now();
    const [others, crasher] = await Promise.allSettled([
      pool.run('collective', allReduce, [0, 2, 3]),
      pool.run('crash', undefined, [1]),
    ]);
    expect(performance.now() - t0).toBeLessThan(5_000);
    expect((crasher as PromiseRejectedResult).reason.message).toMatch(
      /^program "crash" failed on rank 1:\n {2}rank 1: worker error: .*injected crash/,
    );
    const e = (others as PromiseRejectedResult).reason as Error & { errors: Error[] };
    [0, 2, 3].forEach((r) => expect(e.errors[r].message).toMatch(new RegExp(`^rank ${r}: .*rank 1 failed`)));
    expect(pool.failure!.message).toContain('injected crash');
    await rejectionOf(pool.run('collective', allReduce)).then((err) =>
      expect(err.message).toMatch(
        /^RankPool is broken \(rank 1: worker error: .*injected crash.*dispose it and create a new one\.$/,
      ),
    );
    await pool.dispose();
    await rebuildWorks(4, transport);
  });

  test('a program that throws fails its rank and aborts the peers waiting on it', async () => {
    const pool = await faultPool({ size: 2, transport, timeoutMs: 30_000 });
    const t0 = performance.now();
    const [others, failer] = await Promise.allSettled([
      pool.run('collective', allReduce, [0]),
      pool.run('fail', undefined, [1]),
    ]);
    expect(performance.now() - t0).toBeLessThan(5_000);
    expect((failer as PromiseRejectedResult).reason.message).toBe(
      'program "fail" failed on rank 1:\n  rank 1: injected failure',
    );
    expect((others as PromiseRejectedResult).reason.message).toMatch(/rank 0: .*rank 1 failed.*injected failure/);
    await pool.dispose();
  });

  test('a worker that dies mid-call is noticed at once (its life lock), named, and its peers released', async () => {
    const pool = await faultPool({ size: 3, transport, timeoutMs: 30_000 });
    const t0 = performance.now();
    const [others, dead] = await Promise.allSettled([
      pool.run('collective', allReduce, [0, 2]),
      pool.run('die', undefined, [1]),
    ]);
    // Well inside the 30 s collective timeout: the pool noticed the worker end, not a missing peer.
    const ms = performance.now() - t0;
    console.info(
      `${transport}: the dead rank 1 and its released peers were reported ${ms.toFixed(0)} ms after the call`,
    );
    expect(ms).toBeLessThan(5_000);
    expect((dead as PromiseRejectedResult).reason.message).toBe(
      'program "die" failed on rank 1:\n  rank 1: its worker closed or died (its life lock was released).',
    );
    const e = (others as PromiseRejectedResult).reason as Error & { errors: Error[] };
    [0, 2].forEach((r) =>
      expect(e.errors[r].message).toMatch(new RegExp(`^rank ${r}: .*rank 1 failed: its worker closed or died`)),
    );
    const report = await pool.dispose();
    expect(report.deviceLost).toEqual(['destroyed', 'unresponsive', 'destroyed']);
    await rebuildWorks(3, transport);
  });
});
