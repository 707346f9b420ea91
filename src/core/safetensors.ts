/*
 * The safetensors format (huggingface/safetensors, README "Format"): 8 bytes N, an unsigned
 * little-endian 64-bit integer; N bytes of a UTF-8 JSON header mapping each tensor's name to
 * { dtype, shape, data_offsets: [begin, end] } (byte offsets into the data that follows, in order,
 * without gaps) plus an optional "__metadata__" map of strings to strings; then the data, every
 * tensor row-major and little-endian. The header may be padded with spaces; it is padded here so
 * the data starts 8-byte aligned, as the reference writer does.
 */

/** One tensor to write: float32 values, or integers stored as int64 (token ids). */
export interface SafetensorsEntry {
  readonly name: string;
  readonly shape: readonly number[];
  readonly data: Float32Array | BigInt64Array;
}

const dtypeOf = (d: SafetensorsEntry['data']): 'F32' | 'I64' => (d instanceof Float32Array ? 'F32' : 'I64');

/** Bytes of a safetensors file holding `entries` in order, with string `metadata`. */
export function encodeSafetensors(
  entries: readonly SafetensorsEntry[],
  metadata: Readonly<Record<string, string>> = {},
): Uint8Array {
  const header: Record<string, unknown> = {};
  if (Object.keys(metadata).length) header.__metadata__ = metadata;
  let offset = 0;
  for (const e of entries) {
    const n = e.shape.reduce((a, b) => a * b, 1);
    if (n !== e.data.length)
      throw new Error(`encodeSafetensors: ${e.name} has shape [${e.shape.join(', ')}] but ${e.data.length} values.`);
    if (e.name in header) throw new Error(`encodeSafetensors: the name ${e.name} appears twice.`);
    header[e.name] = {
      dtype: dtypeOf(e.data),
      shape: [...e.shape],
      data_offsets: [offset, offset + e.data.byteLength],
    };
    offset += e.data.byteLength;
  }
  let json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil((8 + json.length) / 8) * 8 - 8;
  if (padded > json.length) {
    const p = new Uint8Array(padded).fill(0x20);
    p.set(json);
    json = p;
  }
  const out = new Uint8Array(8 + json.length + offset);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  let at = 8 + json.length;
  for (const e of entries) {
    // Element by element through DataView: little-endian whatever the host's byte order.
    if (e.data instanceof Float32Array) e.data.forEach((v, i) => view.setFloat32(at + 4 * i, v, true));
    else e.data.forEach((v, i) => view.setBigInt64(at + 8 * i, v, true));
    at += e.data.byteLength;
  }
  return out;
}
