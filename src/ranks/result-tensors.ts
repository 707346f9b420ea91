import { outputShape, resolveDim } from '../comm/call.ts';
import type { CollectiveOp, Collectives, ReduceOp } from '../comm/collectives.ts';
import { numel } from '../core/shape.ts';
import type { GpuTensor } from '../kernels/tensor.ts';
import type { GpuBackend } from './backend-gpu.ts';

/**
 * The result tensors of a rank's layer steps, reused from one step to the next: a named collective
 * of step k + 1 writes its result into the tensor the same collective (same name, same size)
 * returned in step k, passed as its `out`, instead of a new tensor whose memory is touched for the
 * first time by the upload. A result lives to the end of its step (the layer may keep it for the
 * backward pass), so only the previous step's results are offered: `endStep` makes this step's
 * the offer and destroys those of the step before that nobody took.
 */
export class ResultTensors {
  // By "name|numel": tensors free for this step (the previous step's), and those taken or made in it.
  private free = new Map<string, GpuTensor[]>();
  private used = new Map<string, GpuTensor[]>();
  private readonly buffers = new Set<GPUBuffer>();

  /** True when `t` is one of these results (freed by endStep, not by its step's backend). */
  owns(t: GpuTensor): boolean {
    return this.buffers.has(t.buffer);
  }

  /** Options for a step's GpuBackend: its release() leaves these results alone. */
  backendOptions(): { ownedElsewhere: (t: GpuTensor) => boolean } {
    return { ownedElsewhere: (t) => this.owns(t) };
  }

  /** The step is over, its results no longer read: they are offered to the next step. */
  endStep(): void {
    this.destroy(this.free);
    this.free = this.used;
    this.used = new Map();
  }

  /** Frees every result held (the runs these results served are over). */
  dispose(): void {
    this.destroy(this.free);
    this.destroy(this.used);
    this.free = new Map();
    this.used = new Map();
  }

  private destroy(byKey: Map<string, GpuTensor[]>): void {
    for (const ts of byKey.values())
      for (const t of ts) {
        this.buffers.delete(t.buffer);
        t.buffer.destroy();
      }
  }

  /** `comm` with every named collective's result written into a tensor of the previous step's. */
  around(comm: Collectives<GpuTensor, GpuTensor>): Collectives<GpuTensor> {
    const reused = async (
      x: GpuTensor,
      op: Exclude<CollectiveOp, 'barrier'>,
      dim: number | undefined,
      tensor: string | undefined,
      run: (out: GpuTensor | undefined) => Promise<GpuTensor>,
    ): Promise<GpuTensor> => {
      if (tensor === undefined) return run(undefined);
      const d = dim === undefined ? undefined : resolveDim(op, x.shape, dim);
      const key = `${tensor}|${numel(outputShape({ seq: 0, op, dtype: 'f32', shape: x.shape, dim: d }, comm.size))}`;
      const out = this.free.get(key)?.pop();
      let y: GpuTensor;
      try {
        y = await run(out);
      } catch (e) {
        if (out) (this.free.get(key) ?? []).push(out);
        throw e;
      }
      if (y !== x) {
        this.used.set(key, [...(this.used.get(key) ?? []), y]);
        this.buffers.add(y.buffer);
      }
      return y;
    };
    return {
      rank: comm.rank,
      size: comm.size,
      transport: comm.transport,
      allReduce: (x: GpuTensor, op?: ReduceOp, tensor?: string) =>
        reused(x, 'allReduce', undefined, tensor, (o) => comm.allReduce(x, op, tensor, o)),
      reduceScatter: (x: GpuTensor, dim: number, op?: ReduceOp, tensor?: string) =>
        reused(x, 'reduceScatter', dim, tensor, (o) => comm.reduceScatter(x, dim, op, tensor, o)),
      allGather: (x: GpuTensor, dim: number, tensor?: string) =>
        reused(x, 'allGather', dim, tensor, (o) => comm.allGather(x, dim, tensor, o)),
      broadcast: (x: GpuTensor, root: number, tensor?: string) =>
        reused(x, 'broadcast', undefined, tensor, (o) => comm.broadcast(x, root, tensor, o)),
      ringExchange: (x: GpuTensor, tensor?: string) =>
        reused(x, 'ringExchange', undefined, tensor, (o) => comm.ringExchange(x, tensor, o)),
      barrier: () => comm.barrier(),
      shard: (x: GpuTensor, dim: number) => comm.shard(x, dim),
    };
  }
}

/** The programs whose steps reuse results per device, each with its own set (one never frees the other's). */
export type ResultOwner = 'layer' | 'classroom';

const perDevice = new WeakMap<GPUDevice, Map<ResultOwner, ResultTensors>>();

/** The reused result tensors of `owner`'s steps on `device` (one set per device and owner). */
export function resultTensors(device: GPUDevice, owner: ResultOwner): ResultTensors {
  let sets = perDevice.get(device);
  if (!sets) perDevice.set(device, (sets = new Map()));
  let r = sets.get(owner);
  if (!r) sets.set(owner, (r = new ResultTensors()));
  return r;
}

/** LayerComm's adopt for a step: `be` takes a collective's result unless `results` (when reused) holds it. */
export function adoptInto(be: GpuBackend, results: ResultTensors | undefined): (t: GpuTensor) => void {
  return (t) => {
    if (!results?.owns(t)) be.adopt(t);
  };
}
