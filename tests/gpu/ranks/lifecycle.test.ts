import { expect, test } from 'vitest';
import { RankPool } from '../../../src/ranks/pool.ts';
import { maxTp } from '../../../src/parallel/validate.ts';
import { poolTransports } from './helpers.ts';

test('20 rebuilds at changing degrees leave no worker alive and every device destroyed', async () => {
  const live = new Set<Worker>();
  let created = 0;
  const createWorker = (): Worker => {
    const w = new Worker(new URL('../../../src/ranks/rank.worker.ts', import.meta.url), { type: 'module' });
    created++;
    live.add(w);
    const terminate = w.terminate.bind(w);
    w.terminate = () => {
      live.delete(w);
      terminate();
    };
    return w;
  };
  const degrees = [1, 2, 3, 4, 8, 2, 1, 4, 3, 8, 2, 4, 1, 3, 2, 8, 4, 1, 2, 3];
  for (const [i, t] of degrees.entries()) {
    const pool = await RankPool.create({ size: t, transport: poolTransports[i % 2], createWorker });
    expect(live.size).toBe(t);
    const ys = await pool.run('collective', (r) => ({
      op: 'allReduce',
      device: 'gpu',
      shape: [3],
      data: new Float32Array(3).fill(r + 1),
    }));
    ys.forEach((y) => expect(Array.from(y.data)).toEqual(new Array(3).fill((t * (t + 1)) / 2)));
    const report = await pool.dispose();
    expect(report.deviceLost).toEqual(new Array(t).fill('destroyed'));
    expect(live.size).toBe(0);
  }
  expect(created).toBe(degrees.reduce((a, b) => a + b, 0));
});

test('resizing re-forms the group over the workers already started: only new ranks start a worker, idle ones keep their device', async () => {
  for (const transport of poolTransports) {
    let created = 0;
    const createWorker = (): Worker => {
      created++;
      return new Worker(new URL('../../../src/ranks/rank.worker.ts', import.meta.url), { type: 'module' });
    };
    const pool = await RankPool.create({ size: 1, transport, createWorker });
    const sizes = [1, 4, 2, 4, 3, 1, 2];
    for (const [i, t] of sizes.entries()) {
      await pool.resize(t);
      expect([pool.size, pool.capacity]).toEqual([t, Math.max(...sizes.slice(0, i + 1))]);
      const ys = await pool.run('collective', (r) => ({
        op: 'allReduce',
        device: 'gpu',
        shape: [3],
        data: new Float32Array(3).fill(r + 1),
      }));
      expect(
        ys.map((y) => Array.from(y.data)),
        `${transport} t=${t}`,
      ).toEqual(new Array(t).fill(new Array(3).fill((t * (t + 1)) / 2)));
      const events = await pool.traces();
      expect(events.map((e) => e.comm?.groupSize)).toEqual(new Array(t).fill(t));
    }
    expect(created).toBe(4);
    await expect(pool.resize(maxTp + 1)).rejects.toThrow(
      `RankPool: size ${maxTp + 1} must be an integer from 1 to ${maxTp}.`,
    );
    expect((await pool.dispose()).deviceLost).toEqual(new Array(4).fill('destroyed'));
    await expect(pool.resize(2)).rejects.toThrow('RankPool: resize on a disposed pool.');
  }
});

test('all ranks stamp one collective on one clock: every rank starts before any rank ends (1 ms slack)', async () => {
  const pool = await RankPool.create({ size: 4 });
  await pool.run('collective', (r) => ({
    op: 'allReduce',
    device: 'cpu',
    shape: [1 << 16],
    data: new Float32Array(1 << 16).fill(r),
  }));
  const events = await pool.traces();
  expect(events.map((e) => e.rank).sort()).toEqual([0, 1, 2, 3]);
  const latestStart = Math.max(...events.map((e) => e.t0));
  const earliestEnd = Math.min(...events.map((e) => e.t1));
  expect(latestStart).toBeLessThanOrEqual(earliestEnd + 1);
  expect(Math.abs(latestStart - (performance.timeOrigin + performance.now()))).toBeLessThan(60_000);
  events.forEach((e) =>
    expect(e.comm).toMatchObject({ seq: 1, transport: 'sab-ring', groupSize: 4, sentBytes: (2 * 3 * (1 << 18)) / 4 }),
  );
  await pool.dispose();
});
