import { describe, expect, test } from 'vitest';
import { hostTensor, type HostTensor } from '../../../src/comm/host-tensor.ts';
import { reduceArrays } from '../../../src/comm/layout.ts';
import { collectiveTolerance, maxAbsDiff } from '../../collective-cases.ts';
import { nodeTransports, randomArray, rejectionOf } from './groups.ts';
import { makeMesh, p2pTransports } from './mesh-groups.ts';
import type { GroupKind } from '../../../src/mesh/rank-layout.ts';

const input = (r: number, n: number, salt: number): HostTensor => hostTensor([n], randomArray(n, 100 * salt + r + 1));

describe.each(nodeTransports)('process groups of a mesh over %s', (kind) => {
  // t 2 × d 2 × p 2 (8 ranks), t 2 × cp 2 × d 2, and the 2 × 2 meshes of the issue.
  test.each([
    { tp: 2, dp: 2 },
    { tp: 2, pp: 2 },
    { tp: 2, dp: 2, pp: 2 },
    { tp: 2, cp: 2, dp: 2 },
  ])('all-reduces in every group of every kind at once sum exactly their own members (%o)', async (degrees) => {
    const m = makeMesh(kind, degrees);
    const kinds: GroupKind[] = ['tp', 'cp', 'dp', 'pp', 'dp-cp'];
    // Every rank a different input per kind: a collective that mixed groups would sum other ranks' values.
    const xs = kinds.map((_, k) => Array.from({ length: m.mesh.world }, (_, r) => input(r, 37, k)));
    const ys = await Promise.all(
      Array.from({ length: m.mesh.world }, async (_, r) => {
        const out: HostTensor[] = [];
        for (const [k, kindOf] of kinds.entries()) out.push(await m.comm(r, kindOf).allReduce(xs[k]![r]!));
        return out;
      }),
    );
    for (const [k, kindOf] of kinds.entries())
      for (let r = 0; r < m.mesh.world; r++) {
        const members = m.mesh.groupOf(r, kindOf).members;
        const want = reduceArrays(
          members.map((q) => xs[k]![q]!.data),
          'sum',
        );
        expect(maxAbsDiff(ys[r]![k]!.data, want), `${kindOf} rank ${r}`).toBeLessThanOrEqual(
          collectiveTolerance(members.length),
        );
      }
    // Each event is on the worker's own (global) rank, with its group's size.
    m.recorders.forEach((rec, r) => {
      const events = rec.drain();
      expect(events.map((e) => e.rank)).toEqual(kinds.map(() => r));
      expect(events.map((e) => e.comm!.groupSize)).toEqual(kinds.map((k) => m.mesh.groupOf(r, k).members.length));
    });
    m.close();
  });
});

describe.each(p2pTransports)('point-to-point in a mesh group over %s', (kind) => {
  test('point-to-point batches pass activations forward and gradients back along every pipeline at once, exactly', async () => {
    // t 2 × p 4: two pipelines (ranks 0, 2, 4, 6 and 1, 3, 5, 7). Stage s sends to s + 1 and receives
    // from s − 1 in one batch (as batch_isend_irecv does), then the reverse; twice, so the per-pair numbering moves on.
    const m = makeMesh(kind, { tp: 2, pp: 4 });
    const p = 4;
    const act = (r: number, step: number) => input(r, 6, 10 + step);
    const results = await Promise.all(
      Array.from({ length: m.mesh.world }, async (_, r) => {
        const pp = m.comm(r, 'pp');
        const s = pp.rank;
        const got: { fwd?: HostTensor; bwd?: HostTensor }[] = [];
        for (let step = 0; step < 2; step++) {
          const fwd = await pp.batchIsendIrecv([
            ...(s < p - 1 ? [{ op: 'send' as const, peer: s + 1, x: act(r, step), tensor: `act${step}` }] : []),
            ...(s > 0 ? [{ op: 'recv' as const, peer: s - 1, shape: [6], tensor: `act${step}` }] : []),
          ]);
          const bwd = await pp.batchIsendIrecv([
            ...(s > 0 ? [{ op: 'send' as const, peer: s - 1, x: act(r, step + 5), tensor: `grad${step}` }] : []),
            ...(s < p - 1 ? [{ op: 'recv' as const, peer: s + 1, shape: [6], tensor: `grad${step}` }] : []),
          ]);
          got.push({ fwd: fwd[0], bwd: bwd[0] });
        }
        return got;
      }),
    );
    for (let r = 0; r < m.mesh.world; r++) {
      const members = m.mesh.groupOf(r, 'pp').members;
      const s = members.indexOf(r);
      for (let step = 0; step < 2; step++) {
        const got = results[r]![step]!;
        if (s > 0) expect(got.fwd!.data).toEqual(act(members[s - 1]!, step).data);
        else expect(got.fwd).toBeUndefined();
        if (s < p - 1) expect(got.bwd!.data).toEqual(act(members[s + 1]!, step + 5).data);
        else expect(got.bwd).toBeUndefined();
      }
    }
    m.close();
  });

  test('a batch that sends and receives both ways between two ranks completes whatever order its ops are in', async () => {
    const m = makeMesh(kind, { pp: 2 });
    const [a, b] = [m.comm(0, 'pp'), m.comm(1, 'pp')];
    const [ya, yb] = await Promise.all([
      a.batchIsendIrecv([
        { op: 'recv', peer: 1, shape: [2] },
        { op: 'send', peer: 1, x: hostTensor([3], new Float32Array([1, 2, 3])) },
      ]),
      b.batchIsendIrecv([
        { op: 'recv', peer: 0, shape: [3] },
        { op: 'send', peer: 0, x: hostTensor([2], new Float32Array([4, 5])) },
      ]),
    ]);
    expect(Array.from(ya[0]!.data)).toEqual([4, 5]);
    expect(Array.from(yb[0]!.data)).toEqual([1, 2, 3]);
    m.close();
  });
});

describe.each(nodeTransports)('faults in a mesh group over %s name the group and every rank’s coordinates', (kind) => {
  test('a shape mismatch in one DP group fails its members, naming the group and each rank; the other DP group completes', async () => {
    const m = makeMesh(kind, { tp: 2, dp: 2 });
    // DP groups: [0, 2] and [1, 3]; rank 3 passes [5] where rank 1 passes [4].
    const t0 = Date.now();
    const outcomes = await Promise.all(
      [0, 1, 2, 3].map((r) =>
        m
          .comm(r, 'dp')
          .allReduce(hostTensor([r === 3 ? 5 : 4]))
          .then(
            () => undefined,
            (e: Error) => e,
          ),
      ),
    );
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(outcomes[0]).toBeUndefined();
    expect(outcomes[2]).toBeUndefined();
    expect(outcomes[1]!.name).toBe('CollectiveMismatchError');
    expect(outcomes[1]!.message).toBe(
      'rank 1 (tp 1, cp 0, dp 0, pp 0) in the DP group 1 (ranks 1, 3): collective call differs across ranks: ' +
        'rank 1 (tp 1, cp 0, dp 0, pp 0) called allReduce(sum, f32 [4]) #1; rank 3 (tp 1, cp 0, dp 1, pp 0) called allReduce(sum, f32 [5]) #1.',
    );
    expect(outcomes[3]!.message).toMatch(/^rank 3 \(tp 1, cp 0, dp 1, pp 0\) in the DP group 1 \(ranks 1, 3\): /);
    m.close();
  });

  test('a rank of a TP group that never arrives is named with its coordinates within 5 s', async () => {
    const m = makeMesh(kind, { tp: 2, pp: 2 }, 1_000);
    const t0 = Date.now();
    // TP group 1 is ranks 2, 3 (stage 1); rank 3 never calls.
    const e = await rejectionOf(m.comm(2, 'tp').allReduce(hostTensor([8])));
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(e.name).toBe('CollectiveTimeoutError');
    expect(e.message).toBe(
      'rank 2 (tp 0, cp 0, dp 0, pp 1) in the TP group 1 (ranks 2, 3): allReduce(sum, f32 [8]) #1 timed out after 1000 ms: rank 3 (tp 1, cp 0, dp 0, pp 1) never arrived.',
    );
    m.close();
  });
});

describe.each(p2pTransports)(
  'point-to-point faults in a mesh group over %s name the group and the ranks’ coordinates',
  (kind) => {
    test('a receive that does not match the send names both ranks, the group and both fingerprints', async () => {
      const m = makeMesh(kind, { tp: 2, pp: 2 });
      // Pipeline 0 is ranks 0, 2: stage 0 sends [4] of act, stage 1 expects [4, 1] of act.
      const sent = m.comm(0, 'pp').send(hostTensor([4]), 1, 'act');
      const e = await rejectionOf(m.comm(2, 'pp').recv([4, 1], 0, 'act'));
      await sent;
      expect(e.name).toBe('P2PMismatchError');
      expect(e.message).toBe(
        'rank 2 (tp 0, cp 0, dp 0, pp 1) in the PP group 0 (ranks 0, 2): expected recv(f32 [4, 1] of act #1) from rank 0 (tp 0, cp 0, dp 0, pp 0), which sent f32 [4] of act #1.',
      );
      // The communicator is broken from then on, saying why.
      const next = await rejectionOf(m.comm(2, 'pp').recv([4], 0, 'act'));
      expect(next.name).toBe('GroupBrokenError');
      m.close();
    });

    test('a receive from a stage that never sends times out within 5 s naming it', async () => {
      const m = makeMesh(kind, { tp: 2, pp: 2 }, 1_000);
      const t0 = Date.now();
      const e = await rejectionOf(m.comm(3, 'pp').recv([2], 0, 'act'));
      expect(Date.now() - t0).toBeLessThan(5_000);
      expect(e.name).toBe('P2PTimeoutError');
      expect(e.message).toBe(
        'rank 3 (tp 1, cp 0, dp 0, pp 1) in the PP group 1 (ranks 1, 3): recv(f32 [2] of act #1) from rank 1 (tp 1, cp 0, dp 0, pp 0) timed out after 1000 ms: rank 1 (tp 1, cp 0, dp 0, pp 0) did not send it.',
      );
      m.close();
    });

    test('a peer outside the group, or the rank itself, is refused before anything moves', async () => {
      const m = makeMesh(kind, { pp: 2 });
      const pp = m.comm(0, 'pp');
      expect((await rejectionOf(pp.send(hostTensor([1]), 2))).message).toBe(
        'send(peer 2): peer 2 is not a rank of this group of 2 (0…1).',
      );
      expect((await rejectionOf(pp.recv([1], 0))).message).toBe(
        'recv(peer 0): rank 0 cannot send to or receive from itself.',
      );
      // Nothing was numbered: the first real message is still #1 on both sides.
      const [, y] = await Promise.all([
        pp.send(hostTensor([1], new Float32Array([7])), 1),
        m.comm(1, 'pp').recv([1], 0),
      ]);
      expect(Array.from(y.data)).toEqual([7]);
      m.close();
    });

    test('a message longer than the shared ring’s point-to-point buffer is refused saying which option to raise', async () => {
      if (kind !== 'sab-ring') return;
      const m = makeMesh(kind, { pp: 2 }, 1_000, 64);
      const e = await rejectionOf(m.comm(0, 'pp').send(hostTensor([17]), 1, 'act'));
      expect(e.message).toBe(
        "rank 0: send(f32 [17] of act #1) moves 68 bytes, more than the shared ring's 64 bytes per point-to-point message; build the pool with a larger p2pCapacityBytes.",
      );
    });

    test('a tensor name longer than a fingerprint holds still matches its receive, and a different long name does not', async () => {
      const m = makeMesh(kind, { pp: 2 });
      const long = `decoder.layers.${'0'.repeat(80)}.act`;
      const [, y] = await Promise.all([
        m.comm(0, 'pp').send(hostTensor([2], new Float32Array([1, 2])), 1, long),
        m.comm(1, 'pp').recv([2], 0, long),
      ]);
      expect(Array.from(y.data)).toEqual([1, 2]);
      // Names differing only past the fingerprint's 68 bytes are told apart in-process and over ports, not in shared memory.
      const other = `${long.slice(0, -3)}grd`;
      const got = await Promise.all([
        m.comm(0, 'pp').send(hostTensor([2]), 1, long),
        m
          .comm(1, 'pp')
          .recv([2], 0, other)
          .then(
            () => 'matched',
            (err: Error) => err.name,
          ),
      ]);
      expect(got[1]).toBe(kind === 'sab-ring' ? 'matched' : 'P2PMismatchError');
      m.close();
    });
  },
);
