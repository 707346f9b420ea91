import { expect, test } from 'vitest';
import { simdReducer } from '../../../src/comm/simd-reduce.ts';
import { randomArray } from './groups.ts';

test.each(['sum', 'max'] as const)(
  'the SIMD %s over shared memory equals the scalar one exactly, at unaligned offsets and odd lengths',
  (op) => {
    const memory = new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
    const f = new Float32Array(memory.buffer);
    const reduce = simdReducer(memory);
    for (const [dst, src, n] of [
      [0, 4096, 1024],
      [3, 5000, 1023],
      [101, 7000, 7],
      [9000, 11, 2],
    ]) {
      const a = randomArray(n, dst + 1);
      const b = randomArray(n, src + 2);
      f.set(a, dst);
      f.set(b, src);
      reduce(op, dst * 4, src * 4, n);
      const want = Float32Array.from(a, (v, i) => (op === 'sum' ? v + b[i] : Math.max(v, b[i])));
      expect(Array.from(f.subarray(dst, dst + n))).toEqual(Array.from(want));
      expect(Array.from(f.subarray(src, src + n))).toEqual(Array.from(b));
    }
  },
);
