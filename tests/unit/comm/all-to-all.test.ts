import { describe, expect, test } from 'vitest';
import { backwardSplits } from '../../../src/comm/all-to-all.ts';
import { callsAgree, type CollectiveCall } from '../../../src/comm/call.ts';
import { benchSplits } from '../../../src/comm/bench-splits.ts';
import { hostTensor, type HostTensor } from '../../../src/comm/host-tensor.ts';
import type { GroupKind, MeshDegrees } from '../../../src/mesh/rank-layout.ts';
import { randomArray, rejectionOf } from './groups.ts';
import { makeMesh, p2pTransports } from './mesh-groups.ts';

// The all-to-all runs on every transport in one Node thread: the shared-memory ring's waits without
// blocking (Atomics.waitAsync, or a 1 ms timer in Node 20), like its point-to-point messages.

/** sends[i][j]: rows rank i sends rank j. Row k of rank i's input is [i, j, k, …] so every row says where it came from. */
function inputsFor(sends: readonly (readonly number[])[], width: number): HostTensor[] {
  return sends.map((row, i) => {
    const rows = row.reduce((a, n) => a + n, 0);
    const data = randomArray(rows * width, 97 * i + 5);
    let k = 0;
    row.forEach((n, j) => {
      for (let m = 0; m < n; m++, k++) data.set([i, j, m], k * width);
    });
    return hostTensor([rows, width], data);
  });
}

/**
 * Rank r's expected result, row by row: for q = 0…t−1 in order, rows Σ_{j<r} sends[q][j] + m,
 * m < sends[q][r], of rank q's input.
 */
function expected(sends: readonly (readonly number[])[], xs: readonly HostTensor[], r: number): number[] {
  const width = xs[0]!.shape[1]!;
  const out: number[] = [];
  sends.forEach((row, q) => {
    const first = row.slice(0, r).reduce((a, n) => a + n, 0);
    for (let m = 0; m < row[r]!; m++) out.push(...xs[q]!.data.subarray((first + m) * width, (first + m + 1) * width));
  });
  return out;
}

const column = (sends: readonly (readonly number[])[], r: number): number[] => sends.map((row) => row[r]!);

/** Uneven counts with zeros: whole rows of zeros (a rank sending nothing) and single zero pairs. */
const uneven: Record<number, number[][]> = {
  1: [[3]],
  2: [
    [1, 4],
    [0, 2],
  ],
  3: [
    [0, 0, 0],
    [2, 0, 5],
    [1, 3, 1],
  ],
  4: [
    [1, 0, 3, 2],
    [4, 1, 0, 0],
    [0, 0, 0, 0],
    [2, 5, 1, 3],
  ],
};

describe.each(p2pTransports)('all-to-all over %s', (kind) => {
  test.each([1, 2, 3, 4])(
    'with uneven and zero splits at t = %i, every rank gets the rows sent to it in rank order, exactly; the splits swapped bring them back',
    async (t) => {
      const m = makeMesh(kind, { tp: t });
      const sends = uneven[t]!;
      const xs = inputsFor(sends, 3);
      const ys = await Promise.all(
        xs.map((x, r) => m.comm(r, 'tp').allToAll(x, { send: sends[r]!, recv: column(sends, r) }, 'tokens')),
      );
      ys.forEach((y, r) => {
        expect(y.shape).toEqual([column(sends, r).reduce((a, n) => a + n, 0), 3]);
        expect(Array.from(y.data), `rank ${r}`).toEqual(expected(sends, xs, r));
      });
      // The backward: the result sent back with send and recv swapped is the input again.
      const back = await Promise.all(
        ys.map((y, r) =>
          m.comm(r, 'tp').allToAll(y, backwardSplits({ send: sends[r]!, recv: column(sends, r) }), 'tokens.grad'),
        ),
      );
      back.forEach((b, r) => expect(Array.from(b.data)).toEqual(Array.from(xs[r]!.data)));
      m.close();
    },
  );

  test('with recv splits left out the send counts are exchanged first: the same rows, and both calls on the trace with bytes per peer', async () => {
    const m = makeMesh(kind, { tp: 4 });
    const sends = uneven[4]!;
    const xs = inputsFor(sends, 3);
    const ys = await Promise.all(xs.map((x, r) => m.comm(r, 'tp').allToAll(x, { send: sends[r]! }, 'moe.dispatch')));
    ys.forEach((y, r) => expect(Array.from(y.data)).toEqual(expected(sends, xs, r)));
    m.recorders.forEach((rec, r) => {
      const [counts, data] = rec.drain();
      expect(counts!.op).toBe('allToAll');
      // The counts: one f32 per rank to each rank.
      expect(counts!.comm!.peers).toEqual({
        ranks: [0, 1, 2, 3],
        sentBytes: [4, 4, 4, 4],
        receivedBytes: [4, 4, 4, 4],
      });
      expect(data!.comm!.peers).toEqual({
        ranks: [0, 1, 2, 3],
        sentBytes: sends[r]!.map((n) => n * 12),
        receivedBytes: column(sends, r).map((n) => n * 12),
      });
      // Sent to others: all but the rows a rank keeps.
      expect(data!.comm!.sentBytes).toBe(sends[r]!.reduce((a, n, j) => a + (j === r ? 0 : n * 12), 0));
      expect(data!.bytes).toBe(sends[r]!.reduce((a, n) => a + n, 0) * 12);
      expect(data!.comm!.seq).toBe(2);
    });
    m.close();
  });

  test('without splits the rows are split evenly, as torch’s all_to_all_single; a result may go into the caller’s array', async () => {
    const m = makeMesh(kind, { tp: 2 });
    const xs = [0, 1].map((r) =>
      hostTensor(
        [4, 2],
        Float32Array.from({ length: 8 }, (_, i) => 10 * r + i),
      ),
    );
    const outs = [0, 1].map(() => new Float32Array(8).fill(NaN));
    const ys = await Promise.all(xs.map((x, r) => m.comm(r, 'tp').allToAll(x, undefined, 'x', outs[r])));
    expect(ys[0]!.data).toBe(outs[0]);
    expect(Array.from(ys[0]!.data)).toEqual([0, 1, 2, 3, 10, 11, 12, 13]);
    expect(Array.from(ys[1]!.data)).toEqual([4, 5, 6, 7, 14, 15, 16, 17]);
    m.close();
  });

  test('all-to-alls in every EP, TP, DP and EDP group of a t 2 × d 2 × ep 2 (etp 1) mesh at once each move rows among their own members only', async () => {
    const degrees: Partial<MeshDegrees> = { tp: 2, dp: 2, ep: 2, etp: 1 };
    const m = makeMesh(kind, degrees);
    const kinds: GroupKind[] = ['ep', 'tp', 'dp', 'edp'];
    // Group rank i sends group rank j 1 + i + 2j rows of 5, each row naming (global rank, kind, j, m).
    const sendsOf = (i: number): number[] => [1 + i, 3 + i];
    const xs = kinds.map((_, k) =>
      Array.from({ length: 4 }, (_, r) => {
        const i = m.mesh.groupOf(r, kinds[k]!).members.indexOf(r);
        const rows = sendsOf(i).flatMap((n, j) => Array.from({ length: n }, (_, q) => [r, k, j, q, 0.5]));
        return hostTensor([rows.length, 5], Float32Array.from(rows.flat()));
      }),
    );
    const ys = await Promise.all(
      [0, 1, 2, 3].map((r) =>
        Promise.all(
          kinds.map((kindOf, k) => {
            const c = m.comm(r, kindOf);
            return c.allToAll(xs[k]![r]!, { send: sendsOf(c.rank), recv: [0, 1].map((q) => sendsOf(q)[c.rank]!) });
          }),
        ),
      ),
    );
    for (let r = 0; r < 4; r++)
      kinds.forEach((kindOf, k) => {
        const { members } = m.mesh.groupOf(r, kindOf);
        const sends = members.map((_, i) => sendsOf(i));
        const want = expected(
          sends,
          members.map((q) => xs[k]![q]!),
          members.indexOf(r),
        );
        expect(Array.from(ys[r]![k]!.data), `${kindOf} rank ${r}`).toEqual(want);
      });
    m.close();
  });
});

describe.each(p2pTransports)('all-to-all faults over %s name the group and every rank’s coordinates', (kind) => {
  test('a rank whose send count to a peer differs from what the peer expects fails the group within 5 s, naming each disagreeing pair', async () => {
    // tp 2 × dp 2 × ep 2 (etp 1): EP group 1 is ranks 2, 3. Rank 2 sends 2 rows to rank 3, which expects 3.
    const m = makeMesh(kind, { tp: 2, dp: 2, ep: 2, etp: 1 });
    const t0 = Date.now();
    const [e2, e3] = await Promise.all([
      rejectionOf(m.comm(2, 'ep').allToAll(hostTensor([3, 4]), { send: [1, 2], recv: [1, 0] }, 'moe.dispatch')),
      rejectionOf(m.comm(3, 'ep').allToAll(hostTensor([0, 4]), { send: [0, 0], recv: [3, 0] }, 'moe.dispatch')),
    ]);
    expect(Date.now() - t0).toBeLessThan(5_000);
    const pair =
      'splits differ across ranks: rank 2 (tp 0, cp 0, dp 1, pp 0; etp 0, ep 0, edp 1) sends 2 rows to rank 3 (tp 1, cp 0, dp 1, pp 0; etp 0, ep 1, edp 1), which expects 3.';
    expect(e2.name).toBe('CollectiveMismatchError');
    expect(e2.message).toBe(
      `rank 2 (tp 0, cp 0, dp 1, pp 0; etp 0, ep 0, edp 1) in the EP group 1 (ranks 2, 3): allToAll(f32 [3, 4]) of moe.dispatch #1: ${pair}`,
    );
    expect(e3.message).toBe(
      `rank 3 (tp 1, cp 0, dp 1, pp 0; etp 0, ep 1, edp 1) in the EP group 1 (ranks 2, 3): allToAll(f32 [0, 4]) of moe.dispatch #1: ${pair}`,
    );
    // The group is broken from then on, saying why.
    expect((await rejectionOf(m.comm(2, 'ep').allToAll(hostTensor([2, 4])))).name).toBe('GroupBrokenError');
    m.close();
  });

  test('rows of another width are a mismatch of the call, naming each rank’s call with its splits', async () => {
    const m = makeMesh(kind, { tp: 2 });
    const [e0] = await Promise.all([
      rejectionOf(m.comm(0, 'tp').allToAll(hostTensor([2, 4]), { send: [1, 1], recv: [1, 1] })),
      rejectionOf(m.comm(1, 'tp').allToAll(hostTensor([2, 3]), { send: [1, 1], recv: [1, 1] })),
    ]);
    expect(e0.message).toBe(
      'rank 0 (tp 0, cp 0, dp 0, pp 0) in the TP group 0 (ranks 0, 1): collective call differs across ranks: rank 0 (tp 0, cp 0, dp 0, pp 0) called allToAll(f32 [2, 4], send [1, 1], recv [1, 1]) #1; rank 1 (tp 1, cp 0, dp 0, pp 0) called allToAll(f32 [2, 3], send [1, 1], recv [1, 1]) #1.',
    );
    m.close();
  });

  test('an EP rank that never arrives is named with its coordinates within 5 s', async () => {
    const m = makeMesh(kind, { tp: 2, dp: 2, ep: 2 }, 1_000);
    const t0 = Date.now();
    // EP group 0 is ranks 0, 2 (etp = tp = 2); rank 2 never calls.
    const e = await rejectionOf(m.comm(0, 'ep').allToAll(hostTensor([3, 2]), { send: [1, 2], recv: [1, 4] }, 'x'));
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(e.name).toBe('CollectiveTimeoutError');
    expect(e.message).toBe(
      'rank 0 (tp 0, cp 0, dp 0, pp 0; etp 0, ep 0, edp 0) in the EP group 0 (ranks 0, 2): allToAll(f32 [3, 2], send [1, 2], recv [1, 4]) of x #1 timed out after 1000 ms: rank 2 (tp 0, cp 0, dp 1, pp 0; etp 0, ep 1, edp 0) never arrived.',
    );
    m.close();
  });

  test('bad splits are refused before anything moves, saying what to pass: the next call is still #1', async () => {
    const m = makeMesh(kind, { tp: 2 });
    const c = m.comm(0, 'tp');
    const bad = async (x: HostTensor, splits?: { send?: number[]; recv?: number[] }) =>
      (await rejectionOf(c.allToAll(x, splits))).message;
    expect(await bad(hostTensor([3, 2]))).toBe(
      'allToAll: dim 0 of shape [3, 2] has 3 rows, not divisible by the group size 2; pass splits: { send, recv }.',
    );
    expect(await bad(hostTensor([3]), { send: [1, 1, 1] })).toBe(
      'allToAll: send splits [1, 1, 1] must be 2 whole row counts ≥ 0, one per rank of the group.',
    );
    expect(await bad(hostTensor([3]), { send: [2, -1], recv: [1, 1] })).toBe(
      'allToAll: send splits [2, -1] must be 2 whole row counts ≥ 0, one per rank of the group.',
    );
    expect(await bad(hostTensor([3]), { send: [1, 1], recv: [1, 1] })).toBe(
      'allToAll: send splits [1, 1] add up to 2 rows, but the input [3] has 3.',
    );
    expect(await bad(hostTensor([2]), { send: [1, 1], recv: [0.5, 1] })).toBe(
      'allToAll: recv splits [0.5, 1] must be 2 whole row counts ≥ 0, one per rank of the group.',
    );
    expect(await bad(hostTensor([]))).toBe(
      'allToAll: a tensor of shape [] has no rows to split; pass a tensor of at least 1 dim.',
    );
    const ys = await Promise.all(
      [0, 1].map((r) => m.comm(r, 'tp').allToAll(hostTensor([2], new Float32Array([r, r + 10])))),
    );
    expect(ys.map((y) => Array.from(y.data))).toEqual([
      [0, 1],
      [10, 11],
    ]);
    expect(m.recorders.map((rec) => rec.drain().map((e) => e.comm?.seq))).toEqual([[1], [1]]);
    m.close();
  });

  test('an input larger than the shared ring’s slot is refused saying which option to raise', async () => {
    if (kind !== 'sab-ring') return;
    const m = makeMesh(kind, { tp: 2 });
    const e = await rejectionOf(m.comm(0, 'tp').allToAll(hostTensor([1025]), { send: [1025, 0], recv: [1025, 0] }));
    expect(e.message).toBe(
      "rank 0: allToAll(f32 [1025], send [1025, 0], recv [1025, 0]) #1 moves 4100 bytes, more than the shared ring's 4096 bytes per rank; build the pool with a larger commCapacityBytes.",
    );
  });
});

describe('the benchmark’s uneven splits', () => {
  test.each([2, 3, 4, 8])(
    'at t = %i every rank sends its whole input, each pair agrees, and the pairs move different amounts',
    (t) => {
      for (const elems of [1 << 14, 1000]) {
        const calls = [...Array(t).keys()].map(
          (r): CollectiveCall => ({
            seq: 1,
            op: 'allToAll',
            dtype: 'f32',
            shape: [elems],
            splits: benchSplits(elems, t, r),
          }),
        );
        for (const c of calls) expect(c.splits!.send.reduce((a, n) => a + n, 0)).toBe(elems);
        expect(callsAgree(calls)).toBe(true);
        expect(new Set(calls[0]!.splits!.send).size).toBe(t);
      }
    },
  );
});
