import { numel } from '../core/shape.ts';
import { createTensor, readTensor, withMappedTensor, writeTensor, type GpuTensor } from '../kernels/tensor.ts';
import { sharedNow } from '../core/clock.ts';
import type { TracePhase } from '../core/trace-event.ts';
import { commEvent, type CallRequest, type CollectiveRunner, type Executed, type ResultTarget } from './base.ts';
import { checkDivisible, named, resolveDim } from './call.ts';
import type { Collectives, ReduceOp, TransportName } from './collectives.ts';
import { hostTensor } from './host-tensor.ts';
import { sliceAlong } from './layout.ts';

/** Result pieces of at least this many elements are uploaded straight from the transport's memory. */
const directUploadElems = 1 << 14;

/**
 * Collectives on one rank's GPU buffers: read back → host collective → upload, each phase on the
 * trace (the upload is written during the host collective's last phase and waited for in 'upload'). Results are new tensors owned by the caller (destroy their buffers); inputs are untouched.
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

  /**
   * A target that uploads the result's pieces into a new tensor as they arrive (large pieces
   * straight from the transport's memory; small ones, e.g. the rows of a gather along the last
   * dim, collected on the host and uploaded in one write by `finish`).
   */
  private uploadTarget(name: string): { target: ResultTarget; finish: () => GpuTensor } {
    let y: GpuTensor | undefined;
    let host: Float32Array | undefined;
    let direct: boolean | undefined;
    const target: ResultTarget = (shape) => {
      y = createTensor(this.device, name, shape);
      const n = numel(shape);
      return (d, at) => {
        direct ??= d.length >= Math.min(n, directUploadElems);
        if (direct) this.device.queue.writeBuffer(y!.buffer, at * 4, d.buffer, d.byteOffset, d.byteLength);
        else (host ??= new Float32Array(n)).set(d, at);
      };
    };
    const finish = (): GpuTensor => {
      if (host) writeTensor(this.device, y!, host);
      return y!;
    };
    return { target, finish };
  }

  private async traced(req: CallRequest, x: GpuTensor): Promise<GpuTensor> {
    const t0 = sharedNow();
    let t1 = t0;
    const { target, finish } = this.uploadTarget(`${x.name}.${req.op}`);
    const run = (data: Float32Array): Promise<Executed> => {
      t1 = sharedNow();
      return this.host.run(req, hostTensor(x.shape, data), target);
    };
    // A transport that copies its input takes the mapped read-back as is (it lands in its slot).
    const e = this.host.copiesInput
      ? await withMappedTensor(this.device, x, run)
      : await run(await readTensor(this.device, x));
    const t2 = sharedNow();
    const y = finish();
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
