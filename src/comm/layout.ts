import { numel } from '../core/shape.ts';
import type { ReduceOp } from './collectives.ts';
import { hostTensor, type HostTensor } from './host-tensor.ts';

/** Views shape as [A, D, B] around `dim`: A = Π shape[<dim], D = shape[dim], B = Π shape[>dim]. */
export function around(shape: readonly number[], dim: number): [number, number, number] {
  return [numel(shape.slice(0, dim)), shape[dim], numel(shape.slice(dim + 1))];
}

/** Element range [lo, hi) of chunk c when n elements are cut into t near-equal chunks. */
export function chunkBounds(n: number, t: number, c: number): [number, number] {
  return [Math.floor((c * n) / t), Math.floor(((c + 1) * n) / t)];
}

/**
 * Reorders [A, D, B] into [t, A, D/t, B] (slice j of `dim` becomes contiguous block j) into `dst`.
 * For dim 0 this is a plain copy.
 */
export function packSlices(
  src: Float32Array,
  shape: readonly number[],
  dim: number,
  t: number,
  dst: Float32Array,
): void {
  const [a, d, b] = around(shape, dim);
  const run = (d / t) * b;
  if (a === 1) return dst.set(src.subarray(0, d * b));
  for (let j = 0; j < t; j++) {
    for (let i = 0; i < a; i++)
      dst.set(src.subarray(i * d * b + j * run, i * d * b + (j + 1) * run), (j * a + i) * run);
  }
}

/**
 * Writes t slices into a result of `shape` = [A, D, B] along `dim`: slice(j) is [A, D/t, B] and
 * lands at [:, j·D/t…(j+1)·D/t, :], one `put(data, at)` per contiguous run (one per slice for dim 0).
 */
export function gatherSlices(
  shape: readonly number[],
  dim: number,
  t: number,
  slice: (j: number) => Float32Array,
  put: (data: Float32Array, at: number) => void,
): void {
  const [a, d, b] = around(shape, dim);
  const run = (d / t) * b;
  for (let j = 0; j < t; j++) {
    const s = slice(j);
    if (a === 1) put(s, j * run);
    else for (let i = 0; i < a; i++) put(s.subarray(i * run, (i + 1) * run), i * d * b + j * run);
  }
}

/** Inverse of packSlices: [t, A, D/t, B] in `src` → [A, D, B] in `dst`; `shape` is the full [.., D, ..]. */
export function unpackSlices(
  src: Float32Array,
  shape: readonly number[],
  dim: number,
  t: number,
  dst: Float32Array,
): void {
  const block = numel(shape) / t;
  gatherSlices(
    shape,
    dim,
    t,
    (j) => src.subarray(j * block, (j + 1) * block),
    (d, at) => dst.set(d, at),
  );
}

/** Slice j of t along `dim`: [.., D, ..] → [.., D/t, ..] (D divisible by t). */
export function sliceAlong(x: HostTensor, dim: number, t: number, j: number): HostTensor {
  const [a, d, b] = around(x.shape, dim);
  const run = (d / t) * b;
  const out = new Float32Array(a * run);
  for (let i = 0; i < a; i++) out.set(x.data.subarray(i * d * b + j * run, i * d * b + (j + 1) * run), i * run);
  const shape = [...x.shape];
  shape[dim] = d / t;
  return hostTensor(shape, out);
}

/** Concatenates equal-shaped parts along `dim`: t × [.., D, ..] → [.., t·D, ..]. */
export function concatAlong(parts: readonly HostTensor[], dim: number): HostTensor {
  const t = parts.length;
  const shape = [...parts[0].shape];
  shape[dim] *= t;
  const packed = new Float32Array(numel(shape));
  const n = parts[0].data.length;
  parts.forEach((p, j) => packed.set(p.data, j * n));
  const out = new Float32Array(packed.length);
  unpackSlices(packed, shape, dim, t, out);
  return hostTensor(shape, out);
}

/** acc[i] = acc[i] ⊕ x[i] for ⊕ = + or max. */
export function accumulate(acc: Float32Array, x: Float32Array, op: ReduceOp): void {
  const n = acc.length;
  if (op === 'sum') for (let i = 0; i < n; i++) acc[i] += x[i];
  else for (let i = 0; i < n; i++) acc[i] = Math.max(acc[i], x[i]);
}

/** Elementwise Σ_r (float64 accumulation) or max_r of equal-length arrays. */
export function reduceArrays(xs: readonly Float32Array[], op: ReduceOp): Float32Array {
  const n = xs[0].length;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    let v = op === 'sum' ? 0 : -Infinity;
    for (const x of xs) v = op === 'sum' ? v + x[i] : Math.max(v, x[i]);
    out[i] = v;
  }
  return out;
}
