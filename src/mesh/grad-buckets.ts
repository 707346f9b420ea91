/**
 * The contiguous gradient (and parameter) buffer of data parallel and its buckets, laid out by
 * Megatron-Core's rule (core_v0.19.0):
 *
 * - parameters are placed in reverse registration order, the order backward produces their
 *   gradients (`params[::-1]`);
 * - plain DDP (`_compute_default_per_buffer_param_layout`, distributed/param_and_grad_buffer.py):
 *   no padding; a bucket closes after the parameter that brings it to ≥ bucketSize elements;
 * - distributed optimizer (`DistributedOptimizer._compute_per_buffer_param_layout`,
 *   optimizer/distrib_optimizer.py, with optimizer/param_layout.py): every parameter starts on a
 *   64-element boundary (`pad_param_start`) and every bucket ends padded to a multiple of
 *   lcm(d, 128) (`pad_bucket_end`), so that each of the d ranks owns an equal contiguous shard
 *   [r·B/d, (r + 1)·B/d) of every bucket (`shard_buffer`);
 * - bucketSize undefined: one bucket (Megatron sets bucket_size = None when overlap_grad_reduce is
 *   off, distributed_data_parallel.py).
 */

/** One parameter of the buffer: its name and element count. */
export interface BufferParam<N extends string = string> {
  readonly name: N;
  readonly numel: number;
}

/** Where a parameter lies: elements [start, end) of the buffer, in bucket `bucket`. */
export interface ParamRange<N extends string = string> {
  readonly name: N;
  readonly start: number;
  readonly end: number;
  readonly bucket: number;
}

/** One bucket: elements [start, end) of the buffer (end padded), its parameters in buffer order. */
export interface GradBucket<N extends string = string> {
  readonly start: number;
  readonly end: number;
  /** Elements up to the last parameter's end, before the bucket-end padding. */
  readonly numelUnpadded: number;
  readonly params: readonly N[];
}

/** The buffer laid out: every parameter's range, the buckets, the total size. */
export interface GradBufferLayout<N extends string = string> {
  readonly params: readonly ParamRange<N>[];
  readonly buckets: readonly GradBucket<N>[];
  readonly numel: number;
  readonly distributedOptimizer: boolean;
  readonly dp: number;
}

const padTo = (v: number, k: number): number => Math.ceil(v / k) * k;
const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
const lcm = (a: number, b: number): number => (a / gcd(a, b)) * b;

/** pad_param_start: a parameter starts on a 64-element boundary. */
export const paramAlign = 64;

/** bucket_end_divisor without pad_buckets_for_high_nccl_busbw: lcm(d, 128). */
export function bucketEndDivisor(dp: number): number {
  return lcm(dp, 128);
}

/**
 * Lays out `params` (registration order, as the model lists them) in a buffer for a data-parallel
 * group of `dp` ranks: Megatron's reverse order, bucket rule and (with the distributed optimizer)
 * padding. Throws naming the bad argument.
 */
export function gradBufferLayout<N extends string>(
  params: readonly BufferParam<N>[],
  bucketSize: number | undefined,
  dp: number,
  distributedOptimizer: boolean,
): GradBufferLayout<N> {
  if (!Number.isInteger(dp) || dp < 1) throw new Error(`grad buffer: dp ${dp} must be a whole number ≥ 1.`);
  if (bucketSize !== undefined && !(Number.isInteger(bucketSize) && bucketSize >= 1))
    throw new Error(
      `grad buffer: bucket size ${bucketSize} must be a whole number of elements ≥ 1 (or none for one bucket).`,
    );
  if (params.length === 0) throw new Error('grad buffer: no parameters to lay out.');
  for (const p of params)
    if (!Number.isInteger(p.numel) || p.numel < 1)
      throw new Error(`grad buffer: parameter ${p.name} has ${p.numel} elements; each needs at least 1.`);
  const padStart = (i: number) => (distributedOptimizer ? padTo(i, paramAlign) : i);
  const padEnd = (i: number) => (distributedOptimizer ? padTo(i, bucketEndDivisor(dp)) : i);
  const ranges: ParamRange<N>[] = [];
  const buckets: GradBucket<N>[] = [];
  let bucketStart = 0;
  let next = 0;
  let open: N[] = [];
  const close = (paramEnd: number): void => {
    const end = padEnd(paramEnd);
    buckets.push({ start: bucketStart, end, numelUnpadded: paramEnd - bucketStart, params: open });
    bucketStart = end;
    next = end;
    open = [];
  };
  for (const p of [...params].reverse()) {
    const start = padStart(next);
    const end = start + p.numel;
    ranges.push({ name: p.name, start, end, bucket: buckets.length });
    open.push(p.name);
    next = end;
    if (bucketSize !== undefined && end - bucketStart >= bucketSize) close(end);
  }
  if (open.length > 0) close(next);
  return { params: ranges, buckets, numel: bucketStart, distributedOptimizer, dp };
}

/** Rank r's shard of a bucket (shard_buffer): elements [start + r·B/d, start + (r + 1)·B/d) of the buffer. */
export function bucketShard(
  layout: Pick<GradBufferLayout, 'buckets' | 'dp'>,
  bucket: number,
  r: number,
): { start: number; end: number } {
  const b = layout.buckets[bucket];
  if (!b) throw new Error(`grad buffer: no bucket ${bucket} (there are ${layout.buckets.length}).`);
  const size = b.end - b.start;
  if (size % layout.dp !== 0)
    throw new Error(
      `grad buffer: bucket ${bucket} has ${size} elements, not divisible by dp ${layout.dp}; lay it out with the distributed optimizer's padding.`,
    );
  const s = size / layout.dp;
  return { start: b.start + r * s, end: b.start + (r + 1) * s };
}

/** The buffer's values from per-parameter arrays (padding zero). */
export function flattenParams<N extends string>(
  layout: GradBufferLayout<N>,
  values: Readonly<Record<N, ArrayLike<number>>>,
): Float32Array {
  const flat = new Float32Array(layout.numel);
  for (const p of layout.params) {
    const v = values[p.name];
    if (v.length !== p.end - p.start)
      throw new Error(`grad buffer: ${p.name} has ${v.length} values; its range holds ${p.end - p.start}.`);
    flat.set(v as ArrayLike<number>, p.start);
  }
  return flat;
}

/** Per-parameter arrays read out of the buffer's values (the inverse of flattenParams). */
export function unflattenParams<N extends string>(
  layout: GradBufferLayout<N>,
  flat: Float32Array,
): Record<N, Float32Array> {
  if (flat.length !== layout.numel)
    throw new Error(`grad buffer: ${flat.length} values given; the buffer holds ${layout.numel}.`);
  return Object.fromEntries(layout.params.map((p) => [p.name, flat.slice(p.start, p.end)])) as Record<N, Float32Array>;
}
