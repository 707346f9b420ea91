import { describe, expect, test } from 'vitest';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { layerTensors, layerTensorsMetadata } from '../../../src/parallel/layer-tensors.ts';
import { runInProcess } from '../../../src/parallel/run-in-process.ts';
import { stepInputs } from '../../../src/parallel/step-data.ts';
import { encodeSafetensors } from '../../../src/core/safetensors.ts';

/**
 * A reader written from the format's description alone (it shares no code with the writer): u64
 * little-endian header length N, N bytes of JSON, then each tensor's bytes at its data_offsets,
 * little-endian. It checks what a strict reader checks: offsets in order without gaps or overlap,
 * covering the data exactly, byte counts matching dtype × shape.
 */
function readSafetensors(bytes: Uint8Array) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = Number(view.getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n))) as Record<string, unknown>;
  const base = 8 + n;
  const size = { F32: 4, I64: 8 } as Record<string, number>;
  const tensors = new Map<string, { dtype: string; shape: number[]; values: number[] }>();
  const spans = Object.entries(header)
    .filter(([k]) => k !== '__metadata__')
    .map(([name, v]) => ({ name, ...(v as { dtype: string; shape: number[]; data_offsets: [number, number] }) }))
    .sort((a, b) => a.data_offsets[0] - b.data_offsets[0]);
  let end = 0;
  for (const t of spans) {
    const [b, e] = t.data_offsets;
    if (b !== end) throw new Error(`${t.name}: starts at ${b}, the previous tensor ended at ${end}`);
    const count = t.shape.reduce((x, y) => x * y, 1);
    if (e - b !== count * size[t.dtype]) throw new Error(`${t.name}: ${e - b} bytes for ${count} × ${t.dtype}`);
    const values: number[] = [];
    for (let i = 0; i < count; i++) {
      const at = base + b + i * size[t.dtype];
      values.push(t.dtype === 'F32' ? view.getFloat32(at, true) : Number(view.getBigInt64(at, true)));
    }
    tensors.set(t.name, { dtype: t.dtype, shape: t.shape, values });
    end = e;
  }
  if (base + end !== bytes.length) throw new Error(`data ends at ${base + end}, the file at ${bytes.length}`);
  return { headerBytes: n, metadata: header.__metadata__ as Record<string, string> | undefined, tensors };
}

describe('safetensors', () => {
  test('a hand-made file reads back: u64 header length, 8-byte aligned data, F32 and I64 little-endian', () => {
    const bytes = encodeSafetensors(
      [
        { name: 'a', shape: [2, 2], data: new Float32Array([1, -2.5, 3e-8, 4]) },
        { name: 'ids', shape: [3], data: new BigInt64Array([0n, 7n, 511n]) },
      ],
      { note: 'hi' },
    );
    const r = readSafetensors(bytes);
    expect((8 + r.headerBytes) % 8).toBe(0);
    expect(r.metadata).toEqual({ note: 'hi' });
    expect(r.tensors.get('a')).toEqual({ dtype: 'F32', shape: [2, 2], values: [1, -2.5, Math.fround(3e-8), 4] });
    expect(r.tensors.get('ids')).toEqual({ dtype: 'I64', shape: [3], values: [0, 7, 511] });
    expect(bytes.length).toBe(8 + r.headerBytes + 16 + 24);
  });

  test('refuses a shape that does not match the values, and a repeated name', () => {
    expect(() => encodeSafetensors([{ name: 'a', shape: [3], data: new Float32Array(2) }])).toThrow(
      'encodeSafetensors: a has shape [3] but 2 values.',
    );
    const a = { name: 'a', shape: [1], data: new Float32Array(1) };
    expect(() => encodeSafetensors([a, a])).toThrow('the name a appears twice');
  });

  test.each([
    ['classroom at t = 2 with SP (vocabulary)', configFromPreset('classroom', { tp: 2, sp: true })],
    ['a layer without vocabulary at t = 2', configFromPreset('classroom', { tp: 2, vocab: 0 })],
    // 2 KV groups < t = 4: grad.wqkv is reassembled from the ranks' even slices of the interleaved columns.
    ['the classroom at t = 4 with the QKV gathered', configFromPreset('classroom', { tp: 4 })],
  ])('a layer run (%s) dumps weights, inputs, outputs and every gradient, read back bit for bit', async (_, c) => {
    const inputs = stepInputs(c);
    const out = await runInProcess(c, inputs);
    const entries = layerTensors(c, inputs, out);
    const r = readSafetensors(encodeSafetensors(entries, layerTensorsMetadata(c)));
    expect(JSON.parse(r.metadata!.config)).toEqual(c);
    const names = [...r.tensors.keys()];
    const params =
      c.vocab > 0
        ? ['wqkv', 'wo', 'g1', 'g2', 'wfc1', 'wdown', 'emb', 'wout']
        : ['wqkv', 'wo', 'g1', 'g2', 'wfc1', 'wdown'];
    expect(names.filter((n) => n.startsWith('weight.'))).toEqual(params.map((p) => `weight.${p}`));
    expect(names.filter((n) => n.startsWith('grad.'))).toEqual(params.map((p) => `grad.${p}`));
    expect(names.filter((n) => /^(input|output)\./.test(n))).toEqual(
      c.vocab > 0
        ? ['input.ids', 'input.targets', 'output.y', 'output.loss']
        : ['input.x', 'input.dy', 'output.y', 'output.dx'],
    );
    for (const e of entries) {
      const t = r.tensors.get(e.name)!;
      expect(t.shape, e.name).toEqual(e.shape);
      expect(t.values, e.name).toEqual(Array.from(e.data, Number));
    }
    expect(r.tensors.get('output.y')!.shape).toEqual([c.s, c.b, c.h]);
  });
});
