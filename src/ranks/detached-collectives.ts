import type { Collectives, ReduceOp } from '../comm/collectives.ts';
import { createTensor, type GpuTensor } from '../kernels/tensor.ts';

/**
 * Collectives that move nothing: results have the shapes the group would give (reductions return
 * their input, gathers and scatters fresh zero tensors). For timing a rank's kernels alone, with
 * the other ranks idle, as if each rank had its own GPU. Never used where values matter.
 */
export class DetachedCollectives implements Collectives<GpuTensor> {
  readonly transport = 'in-process';

  constructor(
    private readonly device: GPUDevice,
    readonly rank: number,
    readonly size: number,
  ) {}

  private resized(x: GpuTensor, dim: number, f: (d: number) => number): GpuTensor {
    const k = dim < 0 ? x.shape.length + dim : dim;
    return createTensor(
      this.device,
      `${x.name}.detached`,
      x.shape.map((d, i) => (i === k ? f(d) : d)),
    );
  }
  async allReduce(x: GpuTensor, _op?: ReduceOp): Promise<GpuTensor> {
    return x;
  }
  async reduceScatter(x: GpuTensor, dim: number): Promise<GpuTensor> {
    return this.resized(x, dim, (d) => d / this.size);
  }
  async allGather(x: GpuTensor, dim: number): Promise<GpuTensor> {
    return this.resized(x, dim, (d) => d * this.size);
  }
  async broadcast(x: GpuTensor): Promise<GpuTensor> {
    return x;
  }
  async ringExchange(x: GpuTensor): Promise<GpuTensor> {
    return this.resized(x, 0, (d) => d);
  }
  async barrier(): Promise<void> {}
  async shard(x: GpuTensor, dim: number): Promise<GpuTensor> {
    return this.resized(x, dim, (d) => d / this.size);
  }
}
