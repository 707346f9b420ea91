import { numel } from '../core/shape.ts';
import {
  createTensor,
  issueReadBack,
  mappedFloats,
  readTensor,
  withMappedTensor,
  writeTensor,
  type GpuTensor,
} from '../kernels/tensor.ts';
import { stagingPool } from '../kernels/staging-pool.ts';
import { sharedNow } from '../core/clock.ts';
import type { TracePhase } from '../core/trace-event.ts';
import {
  commEvent,
  type CallRequest,
  type CollectiveRunner,
  type Executed,
  type PartedInput,
  type ResultTarget,
} from './base.ts';
import { checkDivisible, named, resolveDim } from './call.ts';
import type { Collectives, ReduceOp, TransportName } from './collectives.ts';
import { defaultGpuCollectiveOptions, type GpuCollectiveOptions } from './gpu-options.ts';
import { hostTensor } from './host-tensor.ts';
import { sliceAlong } from './layout.ts';

/** Result pieces of at least this many elements are written straight from the transport's memory ('write-buffer'). */
const directUploadElems = 1 << 14;

/** Element bounds of the parts of an n-element input cut every `partElems` elements (the last shorter). */
export function partBounds(n: number, partElems: number): [number, number][] {
  const out: [number, number][] = [];
  for (let lo = 0; lo < n; lo += partElems) out.push([lo, Math.min(n, lo + partElems)]);
  return out;
}

/**
 * Collectives on one rank's GPU buffers: read back → host collective → upload, each phase on the
 * trace. Staging buffers come from the device's pool (src/kernels/staging-pool.ts). Where the
 * transport moves the op in parts (all-reduce and broadcast on the shared-memory ring), the three
 * are pipelined part by part; otherwise the whole input is read back first. Results are new
 * tensors owned by the caller (destroy their buffers), or the caller's `out` tensor (which may be
 * the input: every read-back copy is submitted before any upload); inputs are otherwise untouched.
 */
export class GpuCollectives implements Collectives<GpuTensor, GpuTensor> {
  readonly rank: number;
  readonly size: number;
  readonly transport: TransportName;

  constructor(
    private readonly device: GPUDevice,
    private readonly host: CollectiveRunner,
    readonly options: GpuCollectiveOptions = defaultGpuCollectiveOptions,
  ) {
    this.rank = host.rank;
    this.size = host.size;
    this.transport = host.transport;
    if (!(options.partBytes >= 4)) throw new Error(`GpuCollectives: partBytes must be ≥ 4, got ${options.partBytes}.`);
  }

  /** The same collectives (same device and group, same sequence) with other options. */
  withOptions(options: Partial<GpuCollectiveOptions>): GpuCollectives {
    return new GpuCollectives(this.device, this.host, { ...this.options, ...options });
  }

  /**
   * A target that uploads the result's pieces as they arrive into `out` or a new tensor. Upload
   * segments are the pipeline parts (`partElems` each; one segment when unparted): with 'mapped',
   * a segment's pieces are written into a pooled mapped buffer that is copied into the result
   * once the segment is complete; with 'write-buffer', large pieces are written straight from the
   * transport's memory and small ones (e.g. the rows of a gather along the last dim) collected on
   * the host and uploaded in one write by `finish`.
   */
  private uploadTarget(
    name: string,
    out: GpuTensor | undefined,
    partElems: number,
  ): { target: ResultTarget; finish: () => GpuTensor; abandon: () => void } {
    let y: GpuTensor | undefined;
    let host: Float32Array | undefined;
    let direct: boolean | undefined;
    const pool = stagingPool(this.device);
    const segs: { lo: number; hi: number; buf?: GPUBuffer; view?: Float32Array; written: number }[] = [];
    const flush = (s: (typeof segs)[number]): void => {
      s.buf!.unmap();
      const enc = this.device.createCommandEncoder();
      enc.copyBufferToBuffer(s.buf!, 0, y!.buffer, s.lo * 4, (s.hi - s.lo) * 4);
      this.device.queue.submit([enc.finish()]);
      pool.release(s.buf!);
      s.buf = s.view = undefined;
    };
    const target: ResultTarget = (shape) => {
      const n = numel(shape);
      if (out && numel(out.shape) !== n)
        throw new Error(
          `the result tensor "${out.name}" holds ${numel(out.shape)} values, but the result [${shape.join(', ')}] has ${n}; pass a tensor of that size.`,
        );
      y = out ? { ...out, shape: [...shape] } : createTensor(this.device, name, shape);
      if (this.options.upload === 'mapped') {
        for (const [lo, hi] of partBounds(n, partElems)) segs.push({ lo, hi, written: 0 });
        return (d, at) => {
          // An empty piece (a ring chunk of a part shorter than t) carries nothing, and its `at`
          // may lie on the next part's first element.
          if (d.length === 0) return;
          const s = segs[Math.floor(at / partElems)];
          if (s.written + d.length > s.hi - s.lo || at + d.length > s.hi)
            throw new Error(`${name}: result piece [${at}, ${at + d.length}) overruns its part [${s.lo}, ${s.hi}).`);
          if (!s.buf) {
            s.buf = pool.acquireWrite((s.hi - s.lo) * 4);
            s.view = new Float32Array(s.buf.getMappedRange(0, (s.hi - s.lo) * 4));
          }
          s.view!.set(d, at - s.lo);
          s.written += d.length;
          if (s.written === s.hi - s.lo) flush(s);
        };
      }
      return (d, at) => {
        direct ??= d.length >= Math.min(n, directUploadElems);
        if (direct) this.device.queue.writeBuffer(y!.buffer, at * 4, d.buffer, d.byteOffset, d.byteLength);
        else (host ??= new Float32Array(n)).set(d, at);
      };
    };
    const finish = (): GpuTensor => {
      const left = segs.find((s) => s.written !== s.hi - s.lo);
      if (left) throw new Error(`${name}: result elements [${left.lo}, ${left.hi}) were not all written.`);
      if (host) writeTensor(this.device, y!, host);
      return y!;
    };
    // A failed call: staging buffers go back unflushed, a result tensor made here is destroyed.
    const abandon = (): void => {
      for (const s of segs) if (s.buf) pool.release(s.buf);
      if (y && !out) y.buffer.destroy();
    };
    return { target, finish, abandon };
  }

  /** The input read back in parts into pooled buffers: every part's copy is submitted at once. */
  private partedInput(x: GpuTensor, partElems: number): PartedInput & { dispose: () => void } {
    const bounds = partBounds(numel(x.shape), partElems);
    const pool = stagingPool(this.device);
    const bufs: (GPUBuffer | undefined)[] = bounds.map(([lo, hi]) => issueReadBack(this.device, x, lo, hi));
    const maps = bufs.map((b, k) => b!.mapAsync(GPUMapMode.READ, 0, (bounds[k][1] - bounds[k][0]) * 4));
    // A part never awaited (the call failed first) still settles; its rejection is not an error here.
    maps.forEach((m) => m.catch(() => {}));
    const release = (k: number): void => {
      const b = bufs[k];
      bufs[k] = undefined;
      if (b) pool.release(b);
    };
    return {
      shape: x.shape,
      bounds,
      part: async (k) => {
        await maps[k];
        return mappedFloats(bufs[k]!, bounds[k][1] - bounds[k][0]);
      },
      release,
      // After the call, settled or failed: hand back the parts it did not release.
      dispose: () => {
        bufs.forEach((b, k) => {
          if (b)
            void maps[k].then(
              () => release(k),
              () => release(k),
            );
        });
      },
    };
  }

  private async traced(req: CallRequest, x: GpuTensor, out?: GpuTensor): Promise<GpuTensor> {
    const t0 = sharedNow();
    let t1 = t0;
    const n = numel(x.shape);
    const parted = this.host.partedOps.includes(req.op) && n > 0;
    const partElems = parted ? Math.max(1, Math.floor(Math.min(this.options.partBytes, n * 4) / 4)) : Math.max(1, n);
    const { target, finish, abandon } = this.uploadTarget(`${x.name}.${req.op}`, out, parted ? partElems : Infinity);
    const run = (data: Float32Array): Promise<Executed> => {
      t1 = sharedNow();
      return this.host.run(req, hostTensor(x.shape, data), target);
    };
    let e: Executed;
    let y: GpuTensor;
    let t2: number;
    try {
      if (parted) {
        const input = this.partedInput(x, partElems);
        try {
          e = await this.host.runParted(req, input, target);
        } finally {
          input.dispose();
        }
      }
      // A transport that copies its input takes the mapped read-back as is (it lands in its slot).
      else
        e = this.host.copiesInput
          ? await withMappedTensor(this.device, x, run)
          : await run(await readTensor(this.device, x));
      t2 = sharedNow();
      y = finish();
    } catch (err) {
      abandon();
      throw err;
    }
    // The upload is submitted, not awaited: the device queue runs it before any later work on
    // this device (a stream-ordered collective), and a pooled upload buffer is reused only once
    // its re-map, which waits for the copy, has finished.
    const t3 = sharedNow();
    const phases: TracePhase[] = [
      ...(parted ? [] : [{ name: 'readback', t0, t1 }]),
      ...e.phases,
      { name: 'upload', t0: t2, t1: t3 },
    ];
    this.host.sink.record(commEvent(this.host, e, 'gpu', t0, t3, phases));
    return y;
  }

  // `out`: the tensor the result is written into and returned as (see Collectives); it must hold
  // numel of the result; reused call after call it saves a new buffer's first touch per result.

  allReduce(x: GpuTensor, op: ReduceOp = 'sum', tensor?: string, out?: GpuTensor): Promise<GpuTensor> {
    return this.traced({ op: 'allReduce', shape: x.shape, reduceOp: op, ...named(tensor) }, x, out);
  }

  reduceScatter(x: GpuTensor, dim: number, op: ReduceOp = 'sum', tensor?: string, out?: GpuTensor): Promise<GpuTensor> {
    return this.traced({ op: 'reduceScatter', shape: x.shape, dim, reduceOp: op, ...named(tensor) }, x, out);
  }

  allGather(x: GpuTensor, dim: number, tensor?: string, out?: GpuTensor): Promise<GpuTensor> {
    return this.traced({ op: 'allGather', shape: x.shape, dim, ...named(tensor) }, x, out);
  }

  broadcast(x: GpuTensor, root: number, tensor?: string, out?: GpuTensor): Promise<GpuTensor> {
    return this.traced({ op: 'broadcast', shape: x.shape, root, ...named(tensor) }, x, out);
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
