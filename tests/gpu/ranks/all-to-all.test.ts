import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { CollectiveCall } from '../../../src/comm/call.ts';
import { hostTensor, type HostTensor } from '../../../src/comm/host-tensor.ts';
import { referenceCollective } from '../../../src/comm/reference.ts';
import { rankMesh, type GroupKind } from '../../../src/mesh/rank-layout.ts';
import type { CollectiveArgs } from '../../../src/ranks/comm-programs.ts';
import { RankPool } from '../../../src/ranks/pool.ts';
import { faultPool, poolTransports, randomArray, rejectionOf } from './helpers.ts';

// A mesh of t 2 × d 2 with ep 2 on 4 rank workers, each with its own GPUDevice: TP groups [0, 1],
// [2, 3]; the expert mesh (etp = tp = 2) puts EP groups at [0, 2], [1, 3] (src/mesh/rank-layout.ts).
const degrees = { tp: 2, dp: 2, ep: 2 };
const layout = rankMesh(degrees);

/** sends[i][j]: rows of 6 group rank i sends group rank j; zeros and a rank sending nothing among them. */
const cases: readonly (readonly (readonly number[])[])[] = [
  [
    [3, 1],
    [0, 5],
  ],
  [
    [0, 0],
    [2, 0],
  ],
  [
    [40, 700],
    [1300, 9],
  ],
];

describe.each(poolTransports)(
  'all-to-all in the groups of a t 2 × d 2 × ep 2 mesh of rank workers over %s',
  (transport) => {
    let pool: RankPool;
    beforeAll(async () => {
      pool = await RankPool.create({ mesh: { degrees }, transport, timeoutMs: 5_000, commCapacityBytes: 1 << 16 });
    });
    afterAll(async () => {
      await pool?.dispose();
    });

    test.each(['cpu', 'gpu'] as const)(
      'on %s data, uneven and zero splits in both EP groups and then both TP groups, given or exchanged, equal the reference over each group’s members, exactly',
      async (device) => {
        let calls = 0;
        for (const kind of ['ep', 'tp'] as GroupKind[])
          for (const [i, sends] of cases.entries())
            for (const exchanged of [false, true]) {
              const splitsOf = (r: number) => {
                const g = layout.groupOf(r, kind).members.indexOf(r);
                return { send: sends[g]!, recv: sends.map((row) => row[g]!) };
              };
              const inputs = [0, 1, 2, 3].map((r) => {
                const rows = splitsOf(r).send.reduce((a, n) => a + n, 0);
                return hostTensor([rows, 6], randomArray(rows * 6, 100 * i + r + 1));
              });
              const ys = await pool.run(
                'collective',
                (r): CollectiveArgs => ({
                  op: 'allToAll',
                  device,
                  group: kind,
                  shape: inputs[r]!.shape,
                  data: inputs[r]!.data,
                  tensor: 'tokens',
                  splitSizes: exchanged ? { send: splitsOf(r).send } : splitsOf(r),
                }),
              );
              calls += exchanged ? 2 : 1;
              for (let r = 0; r < 4; r++) {
                const { members } = layout.groupOf(r, kind);
                const groupCalls = members.map(
                  (q): CollectiveCall => ({
                    seq: 0,
                    op: 'allToAll',
                    dtype: 'f32',
                    shape: inputs[q]!.shape,
                    splits: splitsOf(q),
                  }),
                );
                const want: HostTensor = referenceCollective(
                  groupCalls[0]!,
                  members.map((q) => inputs[q]!),
                  groupCalls,
                )[members.indexOf(r)]!;
                const what = `${kind} case ${i}${exchanged ? ' exchanged' : ''} rank ${r}`;
                expect(ys[r]!.shape, what).toEqual(want.shape);
                expect(Array.from(ys[r]!.data), what).toEqual(Array.from(want.data));
              }
            }
        const events = await pool.traces();
        expect(events).toHaveLength(4 * calls);
        // The data calls' events ([rows, 6]; the exchanged counts are [2], on the host) carry bytes
        // per peer, the peers named by their global ranks: half of them the EP group's, half the TP group's.
        const data = events.filter((e) => e.shape.length === 2);
        expect(data.every((e) => e.comm!.device === device)).toBe(true);
        expect(data).toHaveLength(4 * 2 * 2 * cases.length);
        const inGroup = (kind: GroupKind) =>
          data.filter(
            (e) => JSON.stringify(e.comm!.peers!.ranks) === JSON.stringify(layout.groupOf(e.rank, kind).members),
          );
        expect(inGroup('ep')).toHaveLength(data.length / 2);
        expect(inGroup('tp')).toHaveLength(data.length / 2);
      },
    );
  },
);

describe.each(poolTransports)(
  'all-to-all faults in a mesh of rank workers over %s name the EP group and each rank’s coordinates',
  (transport) => {
    test('on GPU data, a send count that differs from what its peer expects fails both EP ranks within 5 s, naming the pair', async () => {
      const pool = await faultPool({ mesh: { degrees }, transport, timeoutMs: 4_000 });
      const t0 = performance.now();
      // EP group 1 is ranks 1 and 3; rank 1 sends 2 rows to rank 3, which expects 1.
      const e = await rejectionOf(
        pool.run(
          'collective',
          (r): CollectiveArgs => ({
            op: 'allToAll',
            device: 'gpu',
            group: 'ep',
            shape: [r === 1 ? 3 : 2, 4],
            data: new Float32Array((r === 1 ? 3 : 2) * 4),
            tensor: 'moe.dispatch',
            splitSizes: r === 1 ? { send: [1, 2], recv: [1, 1] } : { send: [1, 1], recv: [1, 1] },
          }),
          [1, 3],
        ),
      );
      expect(performance.now() - t0).toBeLessThan(5_000);
      const pair =
        'splits differ across ranks: rank 1 (tp 1, cp 0, dp 0, pp 0; etp 1, ep 0, edp 0) sends 2 rows to rank 3 (tp 1, cp 0, dp 1, pp 0; etp 1, ep 1, edp 0), which expects 1.';
      expect(e.errors![1]!.message).toBe(
        `rank 1 (tp 1, cp 0, dp 0, pp 0; etp 1, ep 0, edp 0) in the EP group 1 (ranks 1, 3): allToAll(f32 [3, 4]) of moe.dispatch #1: ${pair}`,
      );
      expect(e.errors![3]!.message).toBe(
        `rank 3 (tp 1, cp 0, dp 1, pp 0; etp 1, ep 1, edp 0) in the EP group 1 (ranks 1, 3): allToAll(f32 [2, 4]) of moe.dispatch #1: ${pair}`,
      );
      await pool.dispose();
    });

    test('a worker that dies is named by its coordinates to the EP peer waiting on it in an all-to-all, within 5 s', async () => {
      const pool = await faultPool({ mesh: { degrees }, transport, timeoutMs: 30_000 });
      const t0 = performance.now();
      const [waiting, dead] = await Promise.allSettled([
        pool.run(
          'collective',
          { op: 'allToAll', device: 'gpu', group: 'ep', shape: [2, 4], data: new Float32Array(8) },
          [1],
        ),
        pool.run('die', undefined, [3]),
      ]);
      expect(performance.now() - t0).toBeLessThan(5_000);
      expect((dead as PromiseRejectedResult).reason.message).toContain('rank 3: its worker closed or died');
      const err = ((waiting as PromiseRejectedResult).reason as { errors: Error[] }).errors[1]!;
      expect(err.message).toMatch(
        /^rank 1 \(tp 1, cp 0, dp 0, pp 0; etp 1, ep 0, edp 0\) in the EP group 1 \(ranks 1, 3\): /,
      );
      expect(err.message).toContain('rank 3 (tp 1, cp 0, dp 1, pp 0) failed: its worker closed or died');
      await pool.dispose();
    });
  },
);
