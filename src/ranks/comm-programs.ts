import type { CollectiveOp, Collectives, ReduceOp } from '../comm/collectives.ts';
import { hostTensor, type HostTensor } from '../comm/host-tensor.ts';
import { createTensor, readTensor, type GpuTensor } from '../kernels/tensor.ts';
import type { TraceEvent } from '../core/trace-event.ts';
import type { RankContext } from './context.ts';

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
}

function call<T>(comm: Collectives<T>, a: Omit<CollectiveArgs, 'data' | 'shape'>, x: T): Promise<T | void> {
  switch (a.op) {
    case 'allReduce':
      return comm.allReduce(x, a.reduceOp, a.tensor);
    case 'reduceScatter':
      return comm.reduceScatter(x, a.dim!, a.reduceOp, a.tensor);
    case 'allGather':
      return comm.allGather(x, a.dim!, a.tensor);
    case 'broadcast':
      return comm.broadcast(x, a.root!, a.tensor);
    case 'barrier':
      return comm.barrier();
  }
}

/**
 * Runs one collective on host arrays or on a GPU buffer and returns the host copy of the result;
 * any WebGPU validation error on the way fails the call.
 */
export async function collective(ctx: RankContext, a: CollectiveArgs): Promise<HostTensor> {
  const x = hostTensor(a.shape, a.data);
  if (a.device === 'cpu') return (await call(ctx.comm, a, x)) ?? x;
  ctx.device.pushErrorScope('validation');
  const g = createTensor(ctx.device, `x${ctx.rank}`, a.shape, a.data);
  const y = (await call<GpuTensor>(ctx.gpuComm, a, g)) ?? g;
  const out = hostTensor(y.shape, await readTensor(ctx.device, y));
  g.buffer.destroy();
  if (y !== g) y.buffer.destroy();
  const err = await ctx.device.popErrorScope();
  if (err) throw new Error(`rank ${ctx.rank}: WebGPU validation error during ${a.op}: ${err.message}`);
  return out;
}

/** A timed series of one collective: `elems` float32 per rank input, `warmup` untimed calls. */
export interface BenchArgs {
  readonly op: Exclude<CollectiveOp, 'barrier'>;
  readonly device: 'cpu' | 'gpu';
  readonly elems: number;
  readonly iters: number;
  readonly warmup: number;
}

/** Runs the series and returns the trace events of the timed calls. */
export async function benchCollective(ctx: RankContext, a: BenchArgs): Promise<TraceEvent[]> {
  const shape = a.op === 'allGather' ? [a.elems / ctx.size] : [a.elems];
  const data = new Float32Array(shape[0]).fill(ctx.rank + 1);
  const args = { ...a, dim: 0, root: 0 };
  const x = hostTensor(shape, data);
  const g = a.device === 'gpu' ? createTensor(ctx.device, 'bench', shape, data) : undefined;
  const once = async (): Promise<void> => {
    if (!g) return void (await call(ctx.comm, args, x));
    const y = await call<GpuTensor>(ctx.gpuComm, args, g);
    if (y) y.buffer.destroy();
  };
  for (let i = 0; i < a.warmup; i++) await once();
  ctx.trace.drain();
  for (let i = 0; i < a.iters; i++) await once();
  g?.buffer.destroy();
  return ctx.trace.drain();
}

/** The programs of the default rank worker. */
export const commPrograms = { collective, benchCollective };

/** Type of the default worker's programs (for RankPool's type parameter). */
export type CommPrograms = typeof commPrograms;
