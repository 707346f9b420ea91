import { describe, expect, test } from 'vitest';
import type { ReduceOp } from '../../../src/comm/collectives.ts';
import { hostTensor, type HostTensor } from '../../../src/comm/host-tensor.ts';
import { numel } from '../../../src/core/shape.ts';
import { makeGroup, nodeTransports, randomArray, rejectionOf } from './groups.ts';

const degrees = [1, 2, 3, 4, 8];

/** Row-major strides of a shape. */
function strides(shape: readonly number[]): number[] {
  const s = new Array(shape.length).fill(1);
  for (let i = shape.length - 2; i >= 0; i--) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/** Multi-index of flat index i. */
function unflatten(i: number, shape: readonly number[]): number[] {
  return strides(shape).map((st, d) => Math.floor(i / st) % shape[d]);
}

/** Expected all-gather along dim, element by element: out[.., j, ..] = x_{⌊j/D⌋}[.., j mod D, ..]. */
function expectedGather(xs: HostTensor[], dim: number): Float32Array {
  const shape = [...xs[0].shape];
  const d = shape[dim];
  shape[dim] *= xs.length;
  const st = strides(xs[0].shape);
  return Float32Array.from({ length: numel(shape) }, (_, i) => {
    const idx = unflatten(i, shape);
    const r = Math.floor(idx[dim] / d);
    idx[dim] %= d;
    return xs[r].data[idx.reduce((a, v, k) => a + v * st[k], 0)];
  });
}

function expectedReduce(xs: HostTensor[], op: ReduceOp): Float32Array {
  return Float32Array.from({ length: xs[0].data.length }, (_, i) =>
    xs.reduce((a, x) => (op === 'sum' ? a + x.data[i] : Math.max(a, x.data[i])), op === 'sum' ? 0 : -Infinity),
  );
}

/** Slice r of t along dim, element by element. */
function expectedSlice(x: Float32Array, shape: readonly number[], dim: number, t: number, r: number): Float32Array {
  const out = [...shape];
  out[dim] /= t;
  const st = strides(shape);
  return Float32Array.from({ length: numel(out) }, (_, i) => {
    const idx = unflatten(i, out);
    idx[dim] += r * out[dim];
    return x[idx.reduce((a, v, k) => a + v * st[k], 0)];
  });
}

/** Sums of t values in [−1, 1] in any order differ from the float64 sum by ≤ t·2⁻²⁴·t; we allow 1e-6·t². */
function expectClose(actual: Float32Array, expected: Float32Array, t: number): void {
  expect(actual.length).toBe(expected.length);
  const tol = 1e-6 * t * t;
  let worst = 0;
  for (let i = 0; i < actual.length; i++) worst = Math.max(worst, Math.abs(actual[i] - expected[i]));
  expect(worst).toBeLessThanOrEqual(tol);
}

const inputs = (t: number, shape: number[], salt: number): HostTensor[] =>
  Array.from({ length: t }, (_, r) => hostTensor(shape, randomArray(numel(shape), 1000 * salt + r + 1)));

describe.each(nodeTransports)('collectives over %s', (kind) => {
  describe.each(degrees)('with t = %i ranks', (t) => {
    test.each(['sum', 'max'] as const)(
      'allReduce(%s) of any size equals the elementwise reduction on every rank',
      async (op) => {
        for (const shape of [[t * 3, 2], [7, 5], [1], [2 * t + 1]]) {
          const g = makeGroup(kind, t);
          const xs = inputs(t, shape, 1);
          const ys = await Promise.all(g.comms.map((c, r) => c.allReduce(xs[r], op)));
          const want = expectedReduce(xs, op);
          ys.forEach((y) => {
            expect(y.shape).toEqual(shape);
            expectClose(y.data, want, t);
          });
          g.close();
        }
      },
    );

    test.each([0, 1, 2])('reduceScatter along dim %i leaves slice r of the sum on rank r', async (dim) => {
      const shape = [2 * t, 3 * t, t + 1];
      shape[dim] = 2 * t;
      const g = makeGroup(kind, t);
      const xs = inputs(t, shape, 2);
      const ys = await Promise.all(g.comms.map((c, r) => c.reduceScatter(xs[r], dim)));
      const sum = expectedReduce(xs, 'sum');
      ys.forEach((y, r) => expectClose(y.data, expectedSlice(sum, shape, dim, t, r), t));
      g.close();
    });

    test.each([0, 1, 2])('allGather along dim %i concatenates the slices in rank order', async (dim) => {
      const shape = [2, 3, 5];
      const g = makeGroup(kind, t);
      const xs = inputs(t, shape, 3);
      const ys = await Promise.all(g.comms.map((c, r) => c.allGather(xs[r], dim)));
      const want = expectedGather(xs, dim);
      ys.forEach((y) => {
        expect(y.shape[dim]).toBe(shape[dim] * t);
        expect(Array.from(y.data)).toEqual(Array.from(want));
      });
      g.close();
    });

    test('ringExchange hands each rank the tensor of rank r − 1 (mod t), exactly, and sends it once', async () => {
      const g = makeGroup(kind, t);
      for (const shape of [[3, 7], [1], [2, t, 5]]) {
        const xs = inputs(t, shape, 6);
        const ys = await Promise.all(g.comms.map((c, r) => c.ringExchange(xs[r], 'mlp.gather[2/4]')));
        ys.forEach((y, r) => {
          expect(y.shape).toEqual(shape);
          expect(Array.from(y.data)).toEqual(Array.from(xs[(r - 1 + t) % t].data));
          expect(y.data).not.toBe(xs[(r - 1 + t) % t].data);
        });
      }
      g.recorders.forEach((rec) => {
        const [e] = rec.drain();
        expect(e.op).toBe('ringExchange');
        // One ring step moves the whole tensor to r + 1 once: 21 float32 values (none at t = 1).
        expect(e.comm!.sentBytes).toBe(t > 1 ? 21 * 4 : 0);
      });
      g.close();
    });

    test('broadcast copies the root tensor to every rank, from every root', async () => {
      const g = makeGroup(kind, t);
      for (let root = 0; root < t; root++) {
        const xs = inputs(t, [3, 7], 4 + root);
        const ys = await Promise.all(g.comms.map((c, r) => c.broadcast(xs[r], root)));
        ys.forEach((y) => expect(Array.from(y.data)).toEqual(Array.from(xs[root].data)));
      }
      await Promise.all(g.comms.map((c) => c.barrier()));
      g.close();
    });
  });
});

describe.each(nodeTransports)('shape errors over %s', (kind) => {
  describe.each([2, 3, 4, 8])('with t = %i ranks', (t) => {
    test('reduceScatter of a dim not divisible by t raises a clear error (t > 1)', async () => {
      const g = makeGroup(kind, t);
      const e = await rejectionOf(g.comms[0].reduceScatter(hostTensor([t + 1, 2]), 0));
      expect(e.message).toBe(
        `reduceScatter: dim 0 of shape [${t + 1}, 2] has size ${t + 1}, not divisible by the group size ${t}.`,
      );
      g.close();
    });

    test('allGather of slices of unequal size (a gathered dim not divisible by t) fails on every rank, naming the shapes', async () => {
      const g = makeGroup(kind, t);
      const errs = await Promise.all(
        g.comms.map((c, r) => rejectionOf(c.allGather(hostTensor([r === t - 1 ? 1 : 2, 4]), 0))),
      );
      errs.forEach((e, r) => {
        expect(e.name).toBe('CollectiveMismatchError');
        expect(e.message).toContain(`rank ${r}:`);
        expect(e.message).toContain(`rank ${t - 1} called allGather(dim 0, f32 [1, 4]) #1`);
        expect(e.message).toContain('allGather(dim 0, f32 [2, 4]) #1');
      });
      g.close();
    });
  });
});

describe.each(nodeTransports)("results into the caller's array over %s", (kind) => {
  test('each collective writes its result into the given array and returns it; all-reduce in place reads its input first', async () => {
    const t = 4;
    const g = makeGroup(kind, t);
    const xs = Array.from({ length: t }, (_, r) => hostTensor([2 * t, 3], randomArray(6 * t, r + 1)));
    const outs = xs.map(() => new Float32Array(6 * t).fill(NaN));
    const ys = await Promise.all(g.comms.map((c, r) => c.allReduce(xs[r], 'sum', 'x', outs[r])));
    const want = expectedReduce(xs, 'sum');
    ys.forEach((y, r) => {
      expect(y.data).toBe(outs[r]);
      expect(y.shape).toEqual([2 * t, 3]);
      expectClose(y.data, want, t);
    });
    const slices = xs.map(() => new Float32Array(6).fill(NaN));
    const rs = await Promise.all(g.comms.map((c, r) => c.reduceScatter(xs[r], 0, 'max', 'x', slices[r])));
    rs.forEach((y, r) => {
      expect(y.data).toBe(slices[r]);
      expect(y.data).toEqual(expectedSlice(expectedReduce(xs, 'max'), [2 * t, 3], 0, t, r));
    });
    const inPlace = await Promise.all(g.comms.map((c, r) => c.allReduce(xs[r], 'sum', 'x', xs[r].data)));
    inPlace.forEach((y, r) => {
      expect(y.data).toBe(xs[r].data);
      expectClose(y.data, want, t);
    });
    g.close();
  });

  test('an array of the wrong length is refused on every rank before the call is numbered: the next call runs as usual', async () => {
    const t = 2;
    const g = makeGroup(kind, t);
    const errs = await Promise.all(
      g.comms.map((c) => rejectionOf(c.allGather(hostTensor([3]), 0, 'x', new Float32Array(3)))),
    );
    errs.forEach((e) =>
      expect(e.message).toBe(
        'allGather: the result array holds 3 values, but the result [6] has 6; pass an array of that length.',
      ),
    );
    const ys = await Promise.all(g.comms.map((c, r) => c.allReduce(hostTensor([2], new Float32Array([r, 1])))));
    ys.forEach((y) => expect(Array.from(y.data)).toEqual([1, 2]));
    expect(g.recorders.map((rec) => rec.drain().map((e) => e.comm?.seq))).toEqual([[1], [1]]);
    g.close();
  });
});
