import { describe, expect, test } from 'vitest';
import { hostTensor } from '../../../src/comm/host-tensor.ts';
import { ringSentBytes } from '../../../src/comm/ring-schedule.ts';
import { makeGroup, nodeTransports } from './groups.ts';

describe.each(nodeTransports)('trace over %s', (kind) => {
  test('every collective on every rank emits one comm event with seq, op, group size, payload and ring bytes', async () => {
    const t = 4;
    const g = makeGroup(kind, t);
    const x = hostTensor([8, 6]);
    const before = performance.timeOrigin + performance.now();
    await Promise.all(
      g.comms.map(async (c) => {
        await c.allReduce(x);
        await c.reduceScatter(x, 0);
        await c.allGather(x, 1);
        await c.broadcast(x, 2);
        await c.barrier();
      }),
    );
    const after = performance.timeOrigin + performance.now();
    g.recorders.forEach((rec, r) => {
      const events = rec.drain();
      expect(events.map((e) => e.op)).toEqual(['allReduce', 'reduceScatter', 'allGather', 'broadcast', 'barrier']);
      expect(events.map((e) => e.comm!.seq)).toEqual([1, 2, 3, 4, 5]);
      expect(events.map((e) => e.bytes)).toEqual([192, 192, 768, 192, 0]);
      expect(events[0].comm!.sentBytes).toBe(2 * (t - 1) * 48);
      expect(events[2].comm!.sentBytes).toBe((t - 1) * 192);
      expect(events[3].comm!.sentBytes).toBe(r === 1 ? 0 : 192);
      events.forEach((e) => {
        expect(e).toMatchObject({
          rank: r,
          stream: 'comm',
          comm: { groupSize: t, transport: kind, device: 'cpu', dtype: 'f32' },
        });
        expect(e.t0).toBeGreaterThanOrEqual(before);
        expect(e.t1).toBeLessThanOrEqual(after);
        expect(e.phases.length).toBeGreaterThan(0);
        e.phases.forEach((p) => {
          expect(p.t0).toBeGreaterThanOrEqual(e.t0);
          expect(p.t1).toBeLessThanOrEqual(e.t1);
          expect(p.t1).toBeGreaterThanOrEqual(p.t0);
        });
      });
    });
    g.close();
  });
});

describe('ring bytes', () => {
  test.each([2, 3, 4, 8])(
    'at t = %i an all-reduce sends 2(t−1)/t of the payload per rank, summed exactly over uneven chunks',
    (t) => {
      const n = 1000 + t + 1;
      const call = { seq: 1, op: 'allReduce', dtype: 'f32', shape: [n], reduceOp: 'sum' } as const;
      const total = [...Array(t).keys()].reduce((a, r) => a + ringSentBytes(call, t, r), 0);
      expect(total).toBe(2 * (t - 1) * n * 4);
      for (let r = 0; r < t; r++)
        expect(Math.abs(ringSentBytes(call, t, r) - (2 * (t - 1) * n * 4) / t)).toBeLessThanOrEqual(2 * (t - 1) * 4);
    },
  );
});
