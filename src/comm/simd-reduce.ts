import type { ReduceOp } from './collectives.ts';

const leb = (n: number): number[] => {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return out;
};
const str = (s: string): number[] => [s.length, ...[...s].map((c) => c.charCodeAt(0))];
const section = (id: number, body: number[]): number[] => [id, ...leb(body.length), ...body];

/**
 * Body of f(dst, src, n) for n a multiple of 4 (byte offsets into the shared memory):
 * for i in 0…n/4: v128[dst + 16i] = op(v128[dst + 16i], v128[src + 16i]) with op = f32x4.add / f32x4.max.
 */
function body(simdOp: number): number[] {
  const code = [
    0x20,
    2,
    0x41,
    2,
    0x74,
    0x20,
    0,
    0x6a,
    0x21,
    3, // end = dst + 4n
    0x02,
    0x40,
    0x03,
    0x40, // block, loop
    0x20,
    0,
    0x20,
    3,
    0x4f,
    0x0d,
    1, // if dst ≥ end: break
    0x20,
    0,
    0x20,
    0,
    0xfd,
    0x00,
    0,
    0,
    0x20,
    1,
    0xfd,
    0x00,
    0,
    0,
    0xfd,
    ...leb(simdOp),
    0xfd,
    0x0b,
    0,
    0, // store(dst, op(load dst, load src))
    0x20,
    0,
    0x41,
    16,
    0x6a,
    0x21,
    0,
    0x20,
    1,
    0x41,
    16,
    0x6a,
    0x21,
    1, // dst += 16, src += 16
    0x0c,
    0,
    0x0b,
    0x0b,
    0x0b, // br loop, end loop, end block, end func
  ];
  const withLocals = [1, 1, 0x7f, ...code];
  return [...leb(withLocals.length), ...withLocals];
}

/** A WebAssembly module (SIMD) with add(dst, src, n) and max(dst, src, n) over an imported shared memory. */
function moduleBytes(): Uint8Array {
  const bytes = [
    0x00,
    0x61,
    0x73,
    0x6d,
    1,
    0,
    0,
    0,
    ...section(1, [1, 0x60, 3, 0x7f, 0x7f, 0x7f, 0]),
    ...section(2, [1, ...str('env'), ...str('mem'), 0x02, 0x03, 0, ...leb(65536)]),
    ...section(3, [2, 0, 0]),
    ...section(7, [2, ...str('add'), 0, 0, ...str('max'), 0, 1]),
    ...section(10, [2, ...body(0xe4), ...body(0xe9)]),
  ];
  return new Uint8Array(bytes);
}

/** dst[i] = dst[i] ⊕ src[i] for n float32 at byte offsets dst, src of the shared memory. */
export type ReduceKernel = (op: ReduceOp, dst: number, src: number, n: number) => void;

/** Elementwise sum / max on one shared WebAssembly.Memory, 4 lanes at a time (the remainder in JS). */
export function simdReducer(memory: WebAssembly.Memory): ReduceKernel {
  const inst = new WebAssembly.Instance(new WebAssembly.Module(moduleBytes() as BufferSource), {
    env: { mem: memory },
  });
  const fns = inst.exports as {
    add: (d: number, s: number, n: number) => void;
    max: (d: number, s: number, n: number) => void;
  };
  return (op, dst, src, n) => {
    const n4 = n & ~3;
    fns[op === 'sum' ? 'add' : 'max'](dst, src, n4);
    if (n4 === n) return;
    const f = new Float32Array(memory.buffer);
    for (let i = n4; i < n; i++) {
      const a = f[dst / 4 + i];
      const b = f[src / 4 + i];
      f[dst / 4 + i] = op === 'sum' ? a + b : Math.max(a, b);
    }
  };
}
