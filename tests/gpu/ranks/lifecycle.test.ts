import { expect, test } from 'vitest';
import { RankPool } from '../../../src/ranks/pool.ts';
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
    const ys = await pool.run('collective', (r) => ({ op: 'allReduce', device: 'gpu', shape: [3], data: new Float32Array(3).fill(r + 1) }));
    ys.forEach((y) => expect(Array.from(y.data)).toEqual(new Array(3).fill((t * (t + 1)) / 2)));
    const report = await pool.dispose();
    expect(report.deviceLost).toEqual(new Array(t).fill('destroyed'));
    expect(live.size).toBe(0);
  }
  expect(created).toBe(degrees.reduce((a, b) => a + b, 0));
});

test('all ranks stamp one collective on one clock: every rank starts before any rank ends (1 ms slack)', async () => {
  const pool = await RankPool.create({ size: 4 });
  await pool.run('collective', (r) => ({ op: 'allReduce', device: 'cpu', shape: [1 << 16], data: new Float32Array(1 << 16).fill(r) }));
  const events = await pool.traces();
  expect(events.map((e) => e.rank).sort()).toEqual([0, 1, 2, 3]);
  const latestStart = Math.max(...events.map((e) => e.t0));
  const earliestEnd = Math.min(...events.map((e) => e.t1));
  expect(latestStart).toBeLessThanOrEqual(earliestEnd + 1);
  expect(Math.abs(latestStart - (performance.timeOrigin + performance.now()))).toBeLessThan(60_000);
  events.forEach((e) => expect(e.comm).toMatchObject({ seq: 1, transport: 'sab-ring', groupSize: 4, sentBytes: (2 * 3 * (1 << 18)) / 4 }));
  await pool.dispose();
});
