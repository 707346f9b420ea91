import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { hostTensor } from '../../../src/comm/host-tensor.ts';
import { referenceCollective } from '../../../src/comm/reference.ts';
import { numel } from '../../../src/core/shape.ts';
import { rankMesh, type GroupKind } from '../../../src/mesh/rank-layout.ts';
import type { CollectiveArgs, P2PArgOp } from '../../../src/ranks/comm-programs.ts';
import { RankPool } from '../../../src/ranks/pool.ts';
import { collectiveCases, collectiveTolerance, maxAbsDiff } from '../../collective-cases.ts';
import { faultPool, poolTransports, randomArray, rejectionOf } from './helpers.ts';

// A mesh of t 2 × d 2 × p 2 = 8 rank workers, each with its own GPUDevice, every group of every
// dense kind a ring of its own; Megatron's default order puts TP pairs at (0, 1), (2, 3), …, DP pairs
// t apart and stages t·d apart (src/mesh/rank-layout.ts).
const degrees = { tp: 2, dp: 2, pp: 2 };
const layout = rankMesh(degrees);
const kinds: readonly GroupKind[] = ['tp', 'dp', 'pp', 'dp-cp'];

describe.each(poolTransports)('a mesh of t 2 × d 2 × p 2 rank workers over %s', (transport) => {
  let pool: RankPool;
  beforeAll(async () => {
    pool = await RankPool.create({ mesh: { degrees }, transport, timeoutMs: 5_000, commCapacityBytes: 1 << 16 });
  });
  afterAll(async () => {
    await pool?.dispose();
  });

  test('every worker knows its coordinates, its TP rank and the members of each of its groups, as the layout says', async () => {
    expect(pool.size).toBe(8);
    const places = await pool.run('meshPlace', { kinds });
    places.forEach((p, r) => {
      expect(p.rank).toBe(r);
      expect(p.coords).toEqual(layout.coords(r));
      expect(p.tp).toEqual({ rank: layout.coords(r).tp, size: 2 });
      expect(p.members).toEqual(kinds.map((k) => layout.groupOf(r, k).members));
    });
  });

  test.each(['cpu', 'gpu'] as const)(
    'every collective on %s data in every group of every kind, all groups of a kind at once, equals the reference over that group’s members',
    async (device) => {
      // Small cases only (each one runs in 4 kinds of group on 8 workers); every rank's input differs,
      // so a collective that mixed groups would not match its own group's reference.
      const cases = collectiveCases(2).filter((c) => numel(c.shape) < 1 << 12);
      for (const kind of kinds)
        for (const [i, c] of cases.entries()) {
          const inputs = Array.from({ length: 8 }, (_, r) =>
            hostTensor(c.shape, randomArray(numel(c.shape), 1000 * i + r + 1)),
          );
          const ys = await pool.run(
            'collective',
            (r): CollectiveArgs => ({ ...c, device, group: kind, data: inputs[r]!.data }),
          );
          for (let r = 0; r < 8; r++) {
            const { members } = layout.groupOf(r, kind);
            const want = referenceCollective(
              { seq: 0, dtype: 'f32', ...c },
              members.map((q) => inputs[q]!),
            )[members.indexOf(r)]!;
            const what = `${kind} ${c.op} ${c.shape} rank ${r}`;
            expect(ys[r]!.shape, what).toEqual(want.shape);
            expect(maxAbsDiff(ys[r]!.data, want.data), what).toBeLessThanOrEqual(collectiveTolerance(members.length));
          }
        }
      const events = await pool.traces();
      // One event per call on each worker, each on the worker's own global rank.
      expect(events).toHaveLength(kinds.length * cases.length * 8);
      for (let r = 0; r < 8; r++) expect(events.filter((e) => e.rank === r)).toHaveLength(kinds.length * cases.length);
    },
  );

  test.each(['cpu', 'gpu'] as const)(
    'point-to-point batches on %s data pass each stage’s tensor to the next and the gradient back, in both pipelines of every DP replica at once, exactly',
    async (device) => {
      const data = (r: number, salt: number, n: number) => randomArray(n, 50 * salt + r + 1);
      // Stage 0 sends [3, 5] forward and receives [7] back; stage 1 the reverse, in one batch each, twice.
      for (let step = 0; step < 2; step++) {
        const ys = await pool.run('p2p', (r) => {
          const stage = layout.coords(r).pp;
          const ops: P2PArgOp[] =
            stage === 0
              ? [
                  { op: 'send', peer: 1, shape: [3, 5], data: data(r, step, 15), tensor: `act${step}` },
                  { op: 'recv', peer: 1, shape: [7], tensor: `grad${step}` },
                ]
              : [
                  { op: 'recv', peer: 0, shape: [3, 5], tensor: `act${step}` },
                  { op: 'send', peer: 0, shape: [7], data: data(r, step + 9, 7), tensor: `grad${step}` },
                ];
          return { group: 'pp', device, ops };
        });
        ys.forEach((y, r) => {
          const peer = layout.groupOf(r, 'pp').members.find((q) => q !== r)!;
          expect(y).toHaveLength(1);
          if (layout.coords(r).pp === 0) expect(y[0]!.data, `rank ${r}`).toEqual(data(peer, step + 9, 7));
          else {
            expect(y[0]!.shape).toEqual([3, 5]);
            expect(y[0]!.data, `rank ${r}`).toEqual(data(peer, step, 15));
          }
        });
      }
    },
  );
});

describe.each(poolTransports)(
  'faults in a mesh of rank workers over %s name the group and each rank’s coordinates',
  (transport) => {
    const allReduce =
      (kind: GroupKind, n: (r: number) => number) =>
      (r: number): CollectiveArgs => ({
        op: 'allReduce',
        device: 'gpu',
        group: kind,
        shape: [n(r)],
        data: new Float32Array(n(r)),
      });

    test('a shape mismatch in one DP group fails its two ranks within 5 s, each error naming the group and both ranks’ coordinates', async () => {
      const pool = await faultPool({ mesh: { degrees: { tp: 2, dp: 2 } }, transport, timeoutMs: 4_000 });
      const t0 = performance.now();
      // DP group 1 is ranks 1 and 3; rank 3 passes [5] where rank 1 passes [4].
      const e = await rejectionOf(
        pool.run(
          'collective',
          allReduce('dp', (r) => (r === 3 ? 5 : 4)),
          [1, 3],
        ),
      );
      expect(performance.now() - t0).toBeLessThan(5_000);
      for (const r of [1, 3])
        expect(e.errors![r]!.message).toBe(
          `${r === 1 ? 'rank 1 (tp 1, cp 0, dp 0, pp 0)' : 'rank 3 (tp 1, cp 0, dp 1, pp 0)'} in the DP group 1 (ranks 1, 3): collective call differs across ranks: ` +
            'rank 1 (tp 1, cp 0, dp 0, pp 0) called allReduce(sum, f32 [4]) #1; rank 3 (tp 1, cp 0, dp 1, pp 0) called allReduce(sum, f32 [5]) #1.',
        );
      await pool.dispose();
    });

    test('a worker that dies is named by its coordinates, and the peers waiting on it in other groups are released within 5 s', async () => {
      const pool = await faultPool({ mesh: { degrees: { tp: 2, pp: 2 } }, transport, timeoutMs: 30_000 });
      const t0 = performance.now();
      // Rank 3 (tp 1, pp 1) dies; rank 1 waits on it in their PP group, rank 2 in their TP group.
      const [pp, tp, dead] = await Promise.allSettled([
        pool.run('p2p', { group: 'pp', device: 'gpu', ops: [{ op: 'recv', peer: 1, shape: [4] }] }, [1]),
        pool.run(
          'collective',
          allReduce('tp', () => 4),
          [2],
        ),
        pool.run('die', undefined, [3]),
      ]);
      expect(performance.now() - t0).toBeLessThan(5_000);
      expect((dead as PromiseRejectedResult).reason.message).toContain('rank 3: its worker closed or died');
      const dying = 'rank 3 (tp 1, cp 0, dp 0, pp 1) failed: its worker closed or died';
      const ppErr = ((pp as PromiseRejectedResult).reason as { errors: Error[] }).errors[1]!;
      expect(ppErr.message).toMatch(/^rank 1 \(tp 1, cp 0, dp 0, pp 0\) in the PP group 1 \(ranks 1, 3\): /);
      expect(ppErr.message).toContain(dying);
      const tpErr = ((tp as PromiseRejectedResult).reason as { errors: Error[] }).errors[2]!;
      expect(tpErr.message).toMatch(/^rank 2 \(tp 0, cp 0, dp 0, pp 1\) in the TP group 1 \(ranks 2, 3\): /);
      expect(tpErr.message).toContain(dying);
      await pool.dispose();
    });

    test('a receive that does not match its send fails the receiver naming both ends, and releases the sender waiting on it within 5 s', async () => {
      const pool = await faultPool({ mesh: { degrees: { tp: 2, pp: 2 } }, transport, timeoutMs: 30_000 });
      const t0 = performance.now();
      // Pipeline 0 is ranks 0 and 2: rank 0 sends [4] and waits for a gradient that rank 2, expecting [4, 1], never sends.
      const [sender, receiver] = await Promise.allSettled([
        pool.run(
          'p2p',
          {
            group: 'pp',
            device: 'gpu',
            ops: [
              { op: 'send', peer: 1, shape: [4], data: new Float32Array(4), tensor: 'act' },
              { op: 'recv', peer: 1, shape: [3], tensor: 'grad' },
            ],
          },
          [0],
        ),
        pool.run(
          'p2p',
          { group: 'pp', device: 'gpu', ops: [{ op: 'recv', peer: 0, shape: [4, 1], tensor: 'act' }] },
          [2],
        ),
      ]);
      expect(performance.now() - t0).toBeLessThan(5_000);
      const mismatch =
        'rank 2 (tp 0, cp 0, dp 0, pp 1) in the PP group 0 (ranks 0, 2): expected recv(f32 [4, 1] of act #1) from rank 0 (tp 0, cp 0, dp 0, pp 0), which sent f32 [4] of act #1.';
      expect(((receiver as PromiseRejectedResult).reason as { errors: Error[] }).errors[2]!.message).toBe(mismatch);
      const released = ((sender as PromiseRejectedResult).reason as { errors: Error[] }).errors[0]!.message;
      expect(released).toMatch(/^rank 0 \(tp 0, cp 0, dp 0, pp 0\) in the PP group 0 \(ranks 0, 2\): /);
      expect(released).toContain(`communication aborted: rank 2 (tp 0, cp 0, dp 0, pp 1) failed: ${mismatch}`);
      await pool.dispose();
    });
  },
);
