import { createTensor, readTensor, type GpuTensor } from '../kernels/tensor.ts';
import { sharedNow } from '../trace/clock.ts';
import type { TracePhase } from '../trace/event.ts';
import { commEvent, type CallRequest, type CollectiveRunner } from './base.ts';
import { checkDivisible, named, resolveDim } from './call.ts';
import type { Collectives, ReduceOp, TransportName } from './collectives.ts';
import { hostTensor } from './host-tensor.ts';
import { sliceAlong } from './layout.ts';

/**
 * Collectives on one rank's GPU buffers: read back → host collective → upload, each phase on the
 * trace. Results are new tensors owned by the caller (destroy their buffers); inputs are untouched.
 */
export class GpuCollectives implements Collectives<GpuTensor> {
  readonly rank: number;
  readonly size: number;
  readonly transport: TransportName;

  constructor(
    private readonly device: GPUDevice,
    private readonly host: CollectiveRunner,
  ) {
    this.rank = host.rank;
    this.size = host.size;
    this.transport = host.transport;
  }

  private async traced(req: CallRequest, x: GpuTensor): Promise<GpuTensor> {
    const t0 = sharedNow();
    const data = await readTensor(this.device, x);
    const t1 = sharedNow();
    const e = await this.host.run(req, hostTensor(x.shape, data));
    const t2 = sharedNow();
    const y = createTensor(this.device, `${x.name}.${req.op}`, e.out.shape, e.out.data);
    await this.device.queue.onSubmittedWorkDone();
    const t3 = sharedNow();
    const phases: TracePhase[] = [{ name: 'readback', t0, t1 }, ...e.phases, { name: 'upload', t0: t2, t1: t3 }];
    this.host.sink.record(commEvent(this.host, e, 'gpu', t0, t3, phases));
    return y;
  }

  allReduce(x: GpuTensor, op: ReduceOp = 'sum', tensor?: string): Promise<GpuTensor> {
    return this.traced({ op: 'allReduce', shape: x.shape, reduceOp: op, ...named(tensor) }, x);
  }

  reduceScatter(x: GpuTensor, dim: number, op: ReduceOp = 'sum', tensor?: string): Promise<GpuTensor> {
    return this.traced({ op: 'reduceScatter', shape: x.shape, dim, reduceOp: op, ...named(tensor) }, x);
  }

  allGather(x: GpuTensor, dim: number, tensor?: string): Promise<GpuTensor> {
    return this.traced({ op: 'allGather', shape: x.shape, dim, ...named(tensor) }, x);
  }

  broadcast(x: GpuTensor, root: number, tensor?: string): Promise<GpuTensor> {
    return this.traced({ op: 'broadcast', shape: x.shape, root, ...named(tensor) }, x);
  }

  async barrier(): Promise<void> {
    const t0 = sharedNow();
    const e = await this.host.run({ op: 'barrier', shape: [] }, hostTensor([], new Float32Array(1)));
    this.host.sink.record(commEvent(this.host, e, 'gpu', t0, sharedNow(), e.phases));
  }

  /** This rank's slice along `dim` as a new tensor (local: read back, slice, upload). */
  async shard(x: GpuTensor, dim: number): Promise<GpuTensor> {
    const d = resolveDim('shard', x.shape, dim);
    checkDivisible('shard', x.shape, d, this.size);
    const y = sliceAlong(hostTensor(x.shape, await readTensor(this.device, x)), d, this.size, this.rank);
    return createTensor(this.device, `${x.name}.shard`, y.shape, y.data);
  }
}
