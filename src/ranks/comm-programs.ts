import { sharedNow } from '../core/clock.ts';
import { outputShape, resolveDim } from '../comm/call.ts';
import type { CollectiveOp, Collectives, ReduceOp } from '../comm/collectives.ts';
import { hostTensor, type HostTensor } from '../comm/host-tensor.ts';
import { numel } from '../core/shape.ts';
import { createTensor, readTensor, withMappedTensor, type GpuTensor } from '../kernels/tensor.ts';
import type { GpuCollectives } from '../comm/gpu-collectives.ts';
import type { GpuCollectiveOptions } from '../comm/gpu-options.ts';
import type { TraceEvent } from '../core/trace-event.ts';
import type { GroupComm, RankContext } from './context.ts';
import type { GroupKind } from '../mesh/rank-layout.ts';
import type { P2POp } from '../comm/p2p.ts';
import type { AllToAll, AllToAllSplits } from '../comm/all-to-all.ts';
import { benchSplits } from '../comm/bench-splits.ts';
import { epDispatchProgram } from './ep-dispatch-program.ts';

/** One collective call on a rank: `data` is this rank's input of `shape`. */
export interface CollectiveArgs {
  readonly op: CollectiveOp;
  readonly device: 'cpu' | 'gpu';
  readonly shape: readonly number[];
  readonly data: Float32Array;
  readonly dim?: number;
  readonly root?: number;
  readonly reduceOp?: ReduceOp;
  /** The logical tensor's name in the fingerprint. */
  readonly tensor?: string;
  /**
   * Where the result goes — new memory (default), the caller's array or tensor (`out`, filled
   * with NaN first so that an element left unwritten shows), or the input's (`in-place`).
   */
  readonly result?: HostResult;
  /** GPU data: the GPU collectives' options for this call (pipeline part size, upload path). */
  readonly gpu?: Partial<GpuCollectiveOptions>;
  /** The group it runs over (default: the rank's TP group, a plain pool's one group). */
  readonly group?: GroupKind;
  /** An all-to-all's splits on this rank (rows along dim 0 per group rank; see AllToAllSplits). */
  readonly splitSizes?: AllToAllSplits;
}

/** The rank's communicators in its group of `kind` (default its TP group). */
function groupOf(ctx: RankContext, kind: GroupKind | undefined): GroupComm {
  return kind ? ctx.mesh.group(kind) : { comm: ctx.comm, gpuComm: ctx.gpuComm };
}

/** Where a collective's result is written: new memory, a caller's array (or tensor), or the input's. */
export type HostResult = 'new' | 'out' | 'in-place';

function call<T, O = never>(
  comm: Collectives<T, O> & AllToAll<T, O>,
  a: Omit<CollectiveArgs, 'data' | 'shape' | 'device'>,
  x: T,
  out?: O,
): Promise<T | void> {
  switch (a.op) {
    case 'allReduce':
      return comm.allReduce(x, a.reduceOp, a.tensor, out);
    case 'reduceScatter':
      return comm.reduceScatter(x, a.dim!, a.reduceOp, a.tensor, out);
    case 'allGather':
      return comm.allGather(x, a.dim!, a.tensor, out);
    case 'broadcast':
      return comm.broadcast(x, a.root!, a.tensor, out);
    case 'barrier':
      return comm.barrier();
    case 'ringExchange':
      return comm.ringExchange(x, a.tensor, out);
    case 'allToAll':
      return comm.allToAll(x, a.splitSizes, a.tensor, out);
  }
}

/** The caller's array a host result is written into (none for 'new'). */
function resultArray(
  ctx: RankContext,
  a: Omit<CollectiveArgs, 'data' | 'device'>,
  x: HostTensor,
): Float32Array | undefined {
  if (a.result === 'in-place') return x.data;
  if (a.result !== 'out' || a.op === 'barrier') return undefined;
  return new Float32Array(numel(resultShape(ctx, a))).fill(NaN);
}

/** The result's shape of call `a` on this rank's group (a dim counted from the end resolved). */
function resultShape(ctx: RankContext, a: Omit<CollectiveArgs, 'data' | 'device'>): number[] {
  if (a.op === 'allToAll') {
    const { send, recv } = a.splitSizes ?? {};
    if (send && !recv) throw new Error(`rank ${ctx.rank}: an all-to-all into 'out' needs its recv splits.`);
    return [recv ? recv.reduce((s, n) => s + n, 0) : a.shape[0]!, ...a.shape.slice(1)];
  }
  const dim = a.dim === undefined ? undefined : resolveDim(a.op, a.shape, a.dim);
  return outputShape({ ...a, dim, seq: 0, dtype: 'f32' }, groupOf(ctx, a.group).comm.size);
}

/** The GPU collectives of this rank (in its group of `kind`, default TP), with `options` where given. */
function gpuComm(
  ctx: RankContext,
  options: Partial<GpuCollectiveOptions> | undefined,
  kind?: GroupKind,
): GpuCollectives {
  const g = groupOf(ctx, kind).gpuComm;
  return options ? g.withOptions(options) : g;
}

/** The caller's tensor a GPU result is written into (none for 'new'): NaN-filled, or the input. */
function gpuResultTensor(
  ctx: RankContext,
  a: Omit<CollectiveArgs, 'data' | 'device'>,
  g: GpuTensor,
): GpuTensor | undefined {
  if (a.result === 'in-place') return g;
  if (a.result !== 'out' || a.op === 'barrier') return undefined;
  const shape = resultShape(ctx, a);
  return createTensor(ctx.device, `out${ctx.rank}`, shape, new Float32Array(numel(shape)).fill(NaN));
}

/**
 * Runs one collective on host arrays or on a GPU buffer and returns the host copy of the result;
 * any WebGPU validation error on the way fails the call. A host result asked into `out` or in
 * place must come back in that very array.
 */
export async function collective(ctx: RankContext, a: CollectiveArgs): Promise<HostTensor> {
  const x = hostTensor(a.shape, a.data);
  if (a.device === 'cpu') {
    const out = resultArray(ctx, a, x);
    const y = (await call(groupOf(ctx, a.group).comm, a, x, out)) ?? x;
    if (out && y.data !== out)
      throw new Error(`rank ${ctx.rank}: ${a.op} did not return its result in the array given.`);
    return y;
  }
  ctx.device.pushErrorScope('validation');
  const g = createTensor(ctx.device, `x${ctx.rank}`, a.shape, a.data);
  const o = gpuResultTensor(ctx, a, g);
  const y = (await call<GpuTensor, GpuTensor>(gpuComm(ctx, a.gpu, a.group), a, g, o)) ?? g;
  if (o && y.buffer !== o.buffer)
    throw new Error(`rank ${ctx.rank}: ${a.op} did not return its result in the tensor given.`);
  const out = hostTensor(y.shape, await readTensor(ctx.device, y));
  g.buffer.destroy();
  if (y.buffer !== g.buffer) y.buffer.destroy();
  const err = await ctx.device.popErrorScope();
  if (err) throw new Error(`rank ${ctx.rank}: WebGPU validation error during ${a.op}: ${err.message}`);
  return out;
}

/**
 * A timed series of one collective: `elems` float32 per rank input, `warmup` untimed calls;
 * results into new memory each call, or (`out`) into one array (or tensor) of the caller's, reused.
 */
export interface BenchArgs {
  readonly op: Exclude<CollectiveOp, 'barrier'>;
  readonly device: 'cpu' | 'gpu';
  readonly elems: number;
  readonly iters: number;
  readonly warmup: number;
  readonly result?: Exclude<HostResult, 'in-place'>;
  /** GPU data: options of the GPU collectives (pipeline part size, upload path, map delay). */
  readonly gpu?: Partial<GpuCollectiveOptions>;
}

/** Runs the series and returns the trace events of the timed calls. */
export async function benchCollective(ctx: RankContext, a: BenchArgs): Promise<TraceEvent[]> {
  const shape = a.op === 'allGather' ? [a.elems / ctx.size] : [a.elems];
  const data = new Float32Array(shape[0]).fill(ctx.rank + 1);
  const args = {
    ...a,
    dim: 0,
    root: 0,
    shape,
    ...(a.op === 'allToAll' && { splitSizes: benchSplits(a.elems, ctx.size, ctx.rank) }),
  };
  const x = hostTensor(shape, data);
  const g = a.device === 'gpu' ? createTensor(ctx.device, 'bench', shape, data) : undefined;
  const out = g ? undefined : resultArray(ctx, args, x);
  const gOut = g && gpuResultTensor(ctx, args, g);
  const comm = gpuComm(ctx, a.gpu);
  const once = async (): Promise<void> => {
    if (!g) return void (await call(ctx.comm, args, x, out));
    const y = await call<GpuTensor, GpuTensor>(comm, args, g, gOut);
    if (y && !gOut) y.buffer.destroy();
  };
  for (let i = 0; i < a.warmup; i++) await once();
  ctx.trace.drain();
  for (let i = 0; i < a.iters; i++) await once();
  g?.buffer.destroy();
  gOut?.buffer.destroy();
  return ctx.trace.drain();
}

/**
 * The floor of a read-back here: per iteration, the time (ms) of copying 16 bytes into a pooled
 * staging buffer and mapping it `mapAfterMs` after the copy, as the GPU collectives read back
 * ('map'), or of submitting a 16-byte copy between two tensors and awaiting onSubmittedWorkDone
 * ('work-done': the round trip the layer's KernelContext.flush adds before a collective). `ranks`
 * 'one': rank 0 alone, the others idle (they return no times); 'all': every rank at once, each
 * iteration started by a host barrier, as the ranks of a collective read back together (through
 * the browser's one GPU process).
 */
export async function mapRoundTrip(
  ctx: RankContext,
  a: {
    readonly iters: number;
    readonly ranks: 'one' | 'all';
    readonly what?: 'map' | 'work-done';
    readonly mapAfterMs?: number;
  },
): Promise<number[]> {
  if (a.ranks === 'one' && ctx.rank !== 0) return [];
  const x = createTensor(ctx.device, 'tiny', [4], new Float32Array(4));
  const y = createTensor(ctx.device, 'tiny.copy', [4]);
  const once = async (): Promise<void> => {
    if (a.what !== 'work-done') return withMappedTensor(ctx.device, x, async () => undefined, a.mapAfterMs);
    const enc = ctx.device.createCommandEncoder();
    enc.copyBufferToBuffer(x.buffer, 0, y.buffer, 0, 16);
    ctx.device.queue.submit([enc.finish()]);
    await ctx.device.queue.onSubmittedWorkDone();
  };
  await once();
  const times: number[] = [];
  for (let i = 0; i < a.iters; i++) {
    if (a.ranks === 'all') await ctx.comm.barrier();
    const t0 = performance.now();
    await once();
    times.push(performance.now() - t0);
  }
  x.buffer.destroy();
  y.buffer.destroy();
  return times;
}

/** One op of a point-to-point batch as a program takes it: a send of `data` of `shape`, or a receive of `shape`. */
export interface P2PArgOp {
  readonly op: 'send' | 'recv';
  /** The peer's rank in the group. */
  readonly peer: number;
  readonly shape: readonly number[];
  readonly data?: Float32Array;
  readonly tensor?: string;
}

/**
 * One point-to-point batch (batch_isend_irecv) in this rank's group of `group` on host arrays or
 * GPU tensors; returns the received tensors (host copies) in the order of the recv ops. Any
 * WebGPU validation error on the way fails the call.
 */
export async function p2p(
  ctx: RankContext,
  a: { readonly group: GroupKind; readonly device: 'cpu' | 'gpu'; readonly ops: readonly P2PArgOp[] },
): Promise<HostTensor[]> {
  const g = ctx.mesh.group(a.group);
  const hostOp = (o: P2PArgOp): P2POp<HostTensor> =>
    o.op === 'send'
      ? { op: 'send', peer: o.peer, x: hostTensor(o.shape, o.data), ...(o.tensor && { tensor: o.tensor }) }
      : { op: 'recv', peer: o.peer, shape: o.shape, ...(o.tensor && { tensor: o.tensor }) };
  if (a.device === 'cpu') return g.comm.batchIsendIrecv(a.ops.map(hostOp));
  ctx.device.pushErrorScope('validation');
  const ops = a.ops.map((o): P2POp<GpuTensor> => {
    const h = hostOp(o);
    return h.op === 'send' ? { ...h, x: createTensor(ctx.device, `send${ctx.mesh.rank}`, h.x.shape, h.x.data) } : h;
  });
  const got = await g.gpuComm.batchIsendIrecv(ops);
  const out = await Promise.all(got.map(async (y) => hostTensor(y.shape, await readTensor(ctx.device, y))));
  for (const o of ops) if (o.op === 'send') o.x.buffer.destroy();
  got.forEach((y) => y.buffer.destroy());
  const err = await ctx.device.popErrorScope();
  if (err) throw new Error(`rank ${ctx.mesh.rank}: WebGPU validation error during p2p: ${err.message}`);
  return out;
}

/**
 * A timed ping-pong of `elems` float32 between ranks 0 and 1 of the pool's TP group, on host arrays
 * or GPU tensors (a GPU send reads its tensor back, a receive uploads into a new tensor, freed
 * here): rank 0 sends and waits for the same tensor back, rank 1 receives and sends it back. Returns
 * on rank 0 each timed round trip's half, ms (one message's time); other ranks return nothing.
 * `warmup` untimed round trips first.
 */
export async function benchP2P(
  ctx: RankContext,
  a: { readonly device: 'cpu' | 'gpu'; readonly elems: number; readonly iters: number; readonly warmup: number },
): Promise<number[]> {
  if (ctx.rank > 1) return [];
  const shape = [a.elems];
  const peer = 1 - ctx.rank;
  const data = new Float32Array(a.elems).fill(ctx.rank + 1);
  const g = a.device === 'gpu' ? createTensor(ctx.device, 'p2p.bench', shape, data) : undefined;
  const x = hostTensor(shape, data);
  const hop = async (send: boolean): Promise<void> => {
    if (g) {
      if (send) await ctx.gpuComm.send(g, peer, 'p2p.bench');
      else (await ctx.gpuComm.recv(shape, peer, 'p2p.bench')).buffer.destroy();
    } else if (send) await ctx.comm.send(x, peer, 'p2p.bench');
    else await ctx.comm.recv(shape, peer, 'p2p.bench');
  };
  const times: number[] = [];
  for (let i = 0; i < a.warmup + a.iters; i++) {
    const t0 = sharedNow();
    if (ctx.rank === 0) {
      await hop(true);
      await hop(false);
    } else {
      await hop(false);
      await hop(true);
    }
    if (ctx.rank === 0 && i >= a.warmup) times.push((sharedNow() - t0) / 2);
  }
  g?.buffer.destroy();
  ctx.trace.drain();
  return times;
}

/** Where this rank sits: its global rank, coordinates, and the members of each group the pool wired. */
export function meshPlace(
  ctx: RankContext,
  a: { readonly kinds: readonly GroupKind[] },
): { rank: number; coords: RankContext['mesh']['coords']; tp: { rank: number; size: number }; members: number[][] } {
  return {
    rank: ctx.mesh.rank,
    coords: ctx.mesh.coords,
    tp: { rank: ctx.rank, size: ctx.size },
    members: a.kinds.map((k) => [...(ctx.mesh.group(k).view?.members ?? [])]),
  };
}

/** The programs of the default rank worker. */
export const commPrograms = {
  benchP2P,
  collective,
  benchCollective,
  mapRoundTrip,
  p2p,
  meshPlace,
  epDispatch: epDispatchProgram,
};

/** Type of the default worker's programs (for RankPool's type parameter). */
export type CommPrograms = typeof commPrograms;
