import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { CollectiveCall } from '../../../src/comm/call.ts';
import { hostTensor } from '../../../src/comm/host-tensor.ts';
import { referenceCollective } from '../../../src/comm/reference.ts';
import { numel } from '../../../src/core/shape.ts';
import { slicePartBounds, sliceBlock } from '../../../src/comm/slice-parts.ts';
import { RankPool } from '../../../src/ranks/pool.ts';
import { poolTransports, randomArray, rejectionOf } from './helpers.ts';
import { collectiveCases, collectiveTolerance, maxAbsDiff, type CollectiveCase } from '../../collective-cases.ts';

describe.each(poolTransports)('collectives across rank workers over %s', (transport) => {
  describe.each([1, 2, 3, 4, 8])('with t = %i', (t) => {
    let pool: RankPool;
    beforeAll(async () => {
      pool = await RankPool.create({ size: t, transport, timeoutMs: 5_000, commCapacityBytes: 1 << 20 });
    });
    afterAll(async () => {
      await pool?.dispose();
    });

    test.each(['cpu', 'gpu'] as const)(
      'every collective on %s data matches the in-process reference',
      async (device) => {
        expect(pool.transport).toBe(transport);
        for (const [i, c] of collectiveCases(t).entries()) {
          const inputs = Array.from({ length: t }, (_, r) =>
            hostTensor(c.shape, randomArray(numel(c.shape), 100 * i + r + 1)),
          );
          const ys = await pool.run('collective', (r) => ({ ...c, device, data: inputs[r].data }));
          const call: CollectiveCall = { seq: 0, dtype: 'f32', ...c };
          const want = referenceCollective(call, inputs);
          ys.forEach((y, r) => {
            expect(y.shape, `${c.op} rank ${r}`).toEqual(want[r].shape);
            expect(maxAbsDiff(y.data, want[r].data), `${c.op} ${c.shape} rank ${r}`).toBeLessThanOrEqual(
              collectiveTolerance(t),
            );
          });
        }
        const events = await pool.traces();
        expect(events).toHaveLength(collectiveCases(t).length * t);
        events.forEach((e) => expect(e.comm).toMatchObject({ transport, device, groupSize: t }));
        if (device === 'gpu')
          events.forEach((e) =>
            expect(e.phases.map((p) => p.name)).toEqual([
              'readback',
              'sync',
              'stage',
              'transport',
              // sab-ring reads the result from the slots that hold it; message-port copies it out of its buffers.
              transport === 'sab-ring' ? 'gather' : 'unstage',
              'upload',
            ]),
          );
      },
    );

    test("on host data, every collective writes its result into the caller's array (and all-reduce, broadcast, ring exchange into the input's), exactly", async () => {
      // Integers below 2¹⁰ (+ 0 turns a rounded −0 into 0): every sum of t ≤ 8 of them is exact in
      // float32, so the result must equal the reference bit for bit; the caller's array starts as
      // NaN, so an element left unwritten shows. The program fails unless the returned tensor wraps
      // the very array given.
      const ints = (n: number, seed: number): Float32Array => randomArray(n, seed).map((v) => Math.round(v * 1000) + 0);
      for (const [i, c] of collectiveCases(t).entries())
        for (const result of c.op === 'allReduce' || c.op === 'broadcast' || c.op === 'ringExchange'
          ? (['out', 'in-place'] as const)
          : (['out'] as const)) {
          const inputs = Array.from({ length: t }, (_, r) =>
            hostTensor(c.shape, ints(numel(c.shape), 100 * i + r + 1)),
          );
          const ys = await pool.run('collective', (r) => ({ ...c, device: 'cpu', result, data: inputs[r].data }));
          const want = referenceCollective({ seq: 0, dtype: 'f32', ...c }, inputs);
          ys.forEach((y, r) => {
            expect(y.shape, `${c.op} rank ${r}`).toEqual(want[r].shape);
            expect(Array.from(y.data), `${c.op} ${c.shape} into ${result}, rank ${r}`).toEqual(
              Array.from(want[r].data),
            );
          });
        }
    });

    test("on GPU data, collectives pipelined in parts (sizes not divisible by t or by the part, parts smaller than t) give the exact result with either upload, into a new tensor, the caller's or the input's", async () => {
      // Integers below 2¹⁰: sums of t ≤ 8 are exact in float32, so results must equal the reference
      // bit for bit. sab-ring moves every op part by part; message-port reads back whole and takes
      // only the upload path.
      const ints = (n: number, seed: number): Float32Array => randomArray(n, seed).map((v) => Math.round(v * 1000) + 0);
      const parted: (CollectiveCase & { partBytes: number })[] = [
        { op: 'allReduce', shape: [1000], reduceOp: 'sum', partBytes: 7 * 4 },
        { op: 'allReduce', shape: [2 * t + 1], reduceOp: 'sum', partBytes: 4 },
        { op: 'allReduce', shape: [3, 1001], reduceOp: 'max', partBytes: 4096 },
        { op: 'broadcast', shape: [37], root: t - 1, partBytes: 5 * 4 },
        { op: 'reduceScatter', shape: [3, 2 * t], dim: 1, reduceOp: 'sum', partBytes: 8 },
        { op: 'allGather', shape: [2, 3, 5], dim: 2, partBytes: 8 },
        // Reduce-scatter and all-gather parts: pieces of one row (dim 0, A = 1) not dividing the
        // row, whole rows not dividing A, a dim counted from the end, one part for everything.
        { op: 'reduceScatter', shape: [2 * t, 3], dim: 0, reduceOp: 'sum', partBytes: 5 * 4 * t },
        { op: 'reduceScatter', shape: [5, 3 * t, 2], dim: 1, reduceOp: 'max', partBytes: 4 * t * 12 },
        { op: 'reduceScatter', shape: [3, 2 * t], dim: -1, reduceOp: 'sum', partBytes: 1 << 20 },
        { op: 'allGather', shape: [3, 5], dim: 0, partBytes: 4 * 4 },
        { op: 'allGather', shape: [5, 2, 3], dim: 1, partBytes: 12 * 4 },
        { op: 'allGather', shape: [4, 7], dim: -1, partBytes: 1 << 20 },
      ];
      await pool.traces(); // the events of the tests before
      // The read-back maps at once with 'mapped' and after the default pause with 'write-buffer':
      // the pause changes when the map is issued, never what it reads.
      const mapAfter = { mapped: 0, 'write-buffer': undefined } as const;
      for (const [i, { partBytes, ...c }] of parted.entries())
        for (const upload of ['mapped', 'write-buffer'] as const)
          for (const result of ['new', 'out', 'in-place'] as const) {
            if (result === 'in-place' && c.op !== 'allReduce' && c.op !== 'broadcast') continue;
            const inputs = Array.from({ length: t }, (_, r) =>
              hostTensor(c.shape, ints(numel(c.shape), 100 * i + r + 1)),
            );
            const ys = await pool.run('collective', (r) => ({
              ...c,
              device: 'gpu',
              result,
              gpu: { partBytes, upload, ...(mapAfter[upload] !== undefined && { mapAfterMs: mapAfter[upload] }) },
              data: inputs[r].data,
            }));
            // The reference takes the dim counted from the front.
            const dim = c.dim !== undefined && c.dim < 0 ? c.shape.length + c.dim : c.dim;
            const want = referenceCollective({ seq: 0, dtype: 'f32', ...c, dim }, inputs);
            ys.forEach((y, r) => {
              const what = `${c.op} ${c.shape} in parts of ${partBytes} B, upload ${upload}, into ${result}, rank ${r}`;
              expect(y.shape, what).toEqual(want[r].shape);
              expect(Array.from(y.data), what).toEqual(Array.from(want[r].data));
            });
            const events = await pool.traces();
            const n = numel(c.shape);
            const sliced = c.op === 'reduceScatter' || c.op === 'allGather';
            const parts = sliced
              ? slicePartBounds(
                  sliceBlock(c.op as 'reduceScatter' | 'allGather', c.shape, dim!, t),
                  Math.min(partBytes, n * 4) / 4 / (c.op === 'reduceScatter' ? t : 1),
                ).length
              : Math.ceil((n * 4) / partBytes);
            const names = events[0].phases.map((p) => p.name);
            if (transport === 'sab-ring')
              // One arrival, then every part through the ring in turn.
              expect(names, `${c.op} phases`).toEqual([
                'readback',
                'sync',
                'stage',
                'transport',
                'gather',
                ...Array.from({ length: parts - 1 }, () => ['readback', 'stage', 'transport', 'gather']).flat(),
                'upload',
              ]);
            else
              expect(names, `${c.op} phases`).toEqual(['readback', 'sync', 'stage', 'transport', 'unstage', 'upload']);
          }
    });

    if (t > 1)
      test('a reduceScatter of a dim not divisible by t fails on every rank with the shape named', async () => {
        const e = await rejectionOf(
          pool.run('collective', {
            op: 'reduceScatter',
            device: 'gpu',
            shape: [t + 1, 2],
            dim: 0,
            data: new Float32Array(2 * t + 2),
          }),
        );
        expect(e.message).toContain(
          `reduceScatter: dim 0 of shape [${t + 1}, 2] has size ${t + 1}, not divisible by the group size ${t}.`,
        );
        expect(e.errors!.every((x) => x)).toBe(true);
      });
  });
});

test('a negative pause before the read-back map fails on every rank with the value named', async () => {
  // Its own pool: a rank program's error breaks the pool it ran on (RankPool.callAll).
  const pool = await RankPool.create({ size: 2, transport: 'sab-ring', timeoutMs: 5_000, commCapacityBytes: 1 << 16 });
  try {
    const e = await rejectionOf(
      pool.run('collective', {
        op: 'allReduce',
        device: 'gpu',
        shape: [4],
        reduceOp: 'sum',
        gpu: { mapAfterMs: -1 },
        data: new Float32Array(4),
      }),
    );
    expect(e.message).toContain('GpuCollectives: mapAfterMs must be a finite time ≥ 0 (ms), got -1.');
    expect(e.errors!.every((x) => x)).toBe(true);
  } finally {
    await pool.dispose();
  }
});
