import { numel } from '../core/shape.ts';
import {
  createTensor,
  issueReadBack,
  mapReadBacks,
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
  resolveSplits,
} from './base.ts';
import type { AllToAll, AllToAllSplits } from './all-to-all.ts';
import { checkDivisible, named, resolveDim } from './call.ts';
import type { Collectives, ReduceOp, TransportName } from './collectives.ts';
import { defaultGpuCollectiveOptions, type GpuCollectiveOptions } from './gpu-options.ts';
import { hostTensor, type HostTensor } from './host-tensor.ts';
import { sliceAlong } from './layout.ts';
import { partRuns, slicePartBounds, sliceBlock } from './slice-parts.ts';
import type { P2POp, PointToPoint } from './p2p.ts';

/** Result pieces of at least this many elements are written straight from the transport's memory ('write-buffer'). */
const directUploadElems = 1 << 14;

/**
 * Largest result (elements) whose small pieces ('write-buffer') are collected in an array reused
 * from call to call rather than a new one: a new array's pages are faulted in on first write, 15–80
 * µs per 4 KiB page in a worker here (docs/ranks.md), ≈ 0.3 ms per 64 KiB call.
 * 1 MiB per rank kept at most.
 */
const reusedCollectElems = 1 << 18;

/** Element bounds of the parts of an n-element input cut every `partElems` elements (the last shorter). */
export function partBounds(n: number, partElems: number): [number, number][] {
  const out: [number, number][] = [];
  for (let lo = 0; lo < n; lo += partElems) out.push([lo, Math.min(n, lo + partElems)]);
  return out;
}

/**
 * Collectives on one rank's GPU buffers: read back → host collective → upload, each phase on the
 * trace. Staging buffers come from the device's pool (src/kernels/staging-pool.ts). Where the
 * transport moves the op in parts (every op on the shared-memory ring), the three are pipelined
 * part by part; otherwise the whole input is read back first. Results are new
 * tensors owned by the caller (destroy their buffers), or the caller's `out` tensor (which may be
 * the input: every read-back copy is submitted before any upload); inputs are otherwise untouched.
 */
export class GpuCollectives
  implements Collectives<GpuTensor, GpuTensor>, AllToAll<GpuTensor, GpuTensor>, PointToPoint<GpuTensor>
{
  readonly rank: number;
  readonly size: number;
  readonly transport: TransportName;
  /** Where small result pieces are collected before one upload (see reusedCollectElems), kept between calls. */
  private collect: Float32Array | undefined;
  /** Whether a call in flight holds `collect` (a second call then collects in a new array). */
  private collectLent = false;

  constructor(
    private readonly device: GPUDevice,
    private readonly host: CollectiveRunner,
    readonly options: GpuCollectiveOptions = defaultGpuCollectiveOptions,
  ) {
    this.rank = host.rank;
    this.size = host.size;
    this.transport = host.transport;
    if (!(options.partBytes >= 4)) throw new Error(`GpuCollectives: partBytes must be ≥ 4, got ${options.partBytes}.`);
    if (!(options.mapAfterMs >= 0 && Number.isFinite(options.mapAfterMs)))
      throw new Error(`GpuCollectives: mapAfterMs must be a finite time ≥ 0 (ms), got ${options.mapAfterMs}.`);
  }

  /** The same collectives (same device and group, same sequence) with other options. */
  withOptions(options: Partial<GpuCollectiveOptions>): GpuCollectives {
    return new GpuCollectives(this.device, this.host, { ...this.options, ...options });
  }

  /**
   * A target that uploads the result's pieces as they arrive into `out` or a new tensor. Upload
   * segments are the pipeline parts' results, each a list of runs [at, length] of the result
   * (absent: one segment, the whole result): with 'mapped', a segment's pieces are written into a
   * pooled mapped buffer, its runs one after another, that is copied into the result once the
   * segment is complete; with 'write-buffer', large pieces are written straight from the
   * transport's memory and small ones (e.g. the rows of a gather along the last dim) collected on
   * the host and uploaded in one write by `finish`.
   */
  private uploadTarget(
    name: string,
    out: GpuTensor | undefined,
    segments: readonly (readonly (readonly [number, number])[])[] | undefined,
  ): { target: ResultTarget; finish: () => GpuTensor; abandon: () => void } {
    let y: GpuTensor | undefined;
    let host: { data: Float32Array; done: () => void } | undefined;
    let direct: boolean | undefined;
    const pool = stagingPool(this.device);
    type Segment = {
      runs: readonly (readonly [number, number])[];
      size: number;
      buf?: GPUBuffer;
      view?: Float32Array;
      written: number;
    };
    const segs: Segment[] = [];
    // Every run of every segment by its first element: [at, length, segment, offset in the segment].
    let runs: [number, number, Segment, number][] = [];
    const flush = (s: Segment): void => {
      s.buf!.unmap();
      const enc = this.device.createCommandEncoder();
      let from = 0;
      for (const [at, len] of s.runs) {
        enc.copyBufferToBuffer(s.buf!, from * 4, y!.buffer, at * 4, len * 4);
        from += len;
      }
      this.device.queue.submit([enc.finish()]);
      pool.release(s.buf!);
      s.buf = s.view = undefined;
    };
    // The run holding element `at` (binary search over the runs' starts).
    const runAt = (at: number): [number, number, Segment, number] | undefined => {
      let lo = 0;
      let hi = runs.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (runs[mid][0] <= at) lo = mid;
        else hi = mid - 1;
      }
      const run = runs[lo];
      return run && run[0] <= at && at < run[0] + run[1] ? run : undefined;
    };
    const target: ResultTarget = (shape) => {
      const n = numel(shape);
      if (out && numel(out.shape) !== n)
        throw new Error(
          `the result tensor "${out.name}" holds ${numel(out.shape)} values, but the result [${shape.join(', ')}] has ${n}; pass a tensor of that size.`,
        );
      y = out ? { ...out, shape: [...shape] } : createTensor(this.device, name, shape);
      if (this.options.upload === 'mapped') {
        for (const r of segments ?? [[[0, n]]]) {
          const seg: Segment = { runs: r, size: 0, written: 0 };
          for (const [at, len] of r) {
            runs.push([at, len, seg, seg.size]);
            seg.size += len;
          }
          segs.push(seg);
        }
        runs = runs.filter((r) => r[1] > 0).sort((p, q) => p[0] - q[0]);
        return (d, at) => {
          // An empty piece (a ring chunk of a part shorter than t) carries nothing, and its `at`
          // may lie on the next part's first element.
          if (d.length === 0) return;
          const run = runAt(at);
          if (!run || at + d.length > run[0] + run[1] || run[2].written + d.length > run[2].size)
            throw new Error(`${name}: result piece [${at}, ${at + d.length}) lies in no part's run of the result.`);
          const [start, , seg, offset] = run;
          if (!seg.buf) {
            seg.buf = pool.acquireWrite(seg.size * 4);
            seg.view = new Float32Array(seg.buf.getMappedRange(0, seg.size * 4));
          }
          seg.view!.set(d, offset + at - start);
          seg.written += d.length;
          if (seg.written === seg.size) flush(seg);
        };
      }
      return (d, at) => {
        direct ??= d.length >= Math.min(n, directUploadElems);
        if (direct) this.device.queue.writeBuffer(y!.buffer, at * 4, d.buffer, d.byteOffset, d.byteLength);
        else (host ??= this.collectArray(n)).data.set(d, at);
      };
    };
    const finish = (): GpuTensor => {
      const left = segs.find((s) => s.written !== s.size);
      if (left) throw new Error(`${name}: result runs ${JSON.stringify(left.runs)} were not all written.`);
      if (host) writeTensor(this.device, y!, host.data);
      host?.done();
      return y!;
    };
    // A failed call: staging buffers go back unflushed, a result tensor made here is destroyed.
    const abandon = (): void => {
      for (const s of segs) if (s.buf) pool.release(s.buf);
      host?.done();
      if (y && !out) y.buffer.destroy();
    };
    return { target, finish, abandon };
  }

  /**
   * An n-element array to collect small result pieces in, and what to call once it is uploaded: a
   * view of the one kept between calls up to reusedCollectElems unless a call in flight holds it
   * (queue.writeBuffer copies its data at the call, so the next call may overwrite it), else new.
   */
  private collectArray(n: number): { data: Float32Array; done: () => void } {
    if (n > reusedCollectElems || this.collectLent) return { data: new Float32Array(n), done: () => {} };
    if (!this.collect || this.collect.length < n) this.collect = new Float32Array(n);
    this.collectLent = true;
    return { data: this.collect.subarray(0, n), done: () => (this.collectLent = false) };
  }

  /**
   * The input read back in parts into pooled buffers, part k being runs[k] of x concatenated:
   * every part's copy is submitted at once, and every part mapped `mapAfterMs` later.
   */
  private partedInput(
    x: GpuTensor,
    bounds: readonly (readonly [number, number])[],
    runs: readonly (readonly (readonly [number, number])[])[],
  ): PartedInput & { dispose: () => void } {
    const pool = stagingPool(this.device);
    const sizes = runs.map((r) => r.reduce((s, [, len]) => s + len, 0));
    const staged = runs.map((r) => issueReadBack(this.device, x, r));
    const maps = mapReadBacks(
      staged,
      sizes.map((n) => n * 4),
      this.options.mapAfterMs,
    );
    // A part's buffer until it is released.
    const bufs: (GPUBuffer | undefined)[] = [...staged];
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
        return mappedFloats(bufs[k]!, sizes[k]);
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

  /**
   * How a call is pipelined, or undefined when it is read back whole (an op the transport does not
   * move in parts, an empty input, a reduce-scatter whose dim does not split, which run() rejects):
   * the parts' bounds as the transport takes them (CollectiveRunner.runParted), and per part the
   * runs [at, length] of the input it reads back and of the result it uploads. An all-reduce's or
   * broadcast's parts are `partBytes` of the input; a reduce-scatter's or all-gather's are ranges of
   * its slice block (slice-parts.ts) of about `partBytes` of input.
   */
  private parts(
    req: CallRequest,
    shape: readonly number[],
  ):
    | {
        bounds: [number, number][];
        inputs: (readonly [number, number])[][];
        results: (readonly [number, number])[][];
      }
    | undefined {
    const n = numel(shape);
    if (!this.host.partedOps.includes(req.op) || n === 0) return undefined;
    const partElems = Math.max(1, Math.floor(Math.min(this.options.partBytes, n * 4) / 4));
    if (req.op !== 'reduceScatter' && req.op !== 'allGather') {
      const bounds = partBounds(n, partElems);
      const runs = bounds.map(([lo, hi]): (readonly [number, number])[] => [[lo, hi - lo]]);
      return { bounds, inputs: runs, results: runs };
    }
    const dim = resolveDim(req.op, shape, req.dim!);
    if (req.op === 'reduceScatter' && shape[dim] % this.size !== 0) return undefined;
    const block = sliceBlock(req.op, shape, dim, this.size);
    const t = this.size;
    const rs = req.op === 'reduceScatter';
    // A reduce-scatter part reads t ranges of its block's size, an all-gather part one.
    const bounds = slicePartBounds(block, rs ? partElems / t : partElems);
    const own = bounds.map(([lo, hi]): (readonly [number, number])[] => [[lo, hi - lo]]);
    const all = bounds.map(([lo, hi]) => partRuns(lo, hi, block.m, t));
    return { bounds, inputs: rs ? all : own, results: rs ? own : all };
  }

  private async traced(req: CallRequest, x: GpuTensor, out?: GpuTensor): Promise<GpuTensor> {
    const t0 = sharedNow();
    let t1 = t0;
    const parts = this.parts(req, x.shape);
    const { target, finish, abandon } = this.uploadTarget(`${x.name}.${req.op}`, out, parts?.results);
    const run = (data: Float32Array): Promise<Executed> => {
      t1 = sharedNow();
      return this.host.run(req, hostTensor(x.shape, data), target);
    };
    let e: Executed;
    let y: GpuTensor;
    try {
      if (parts) {
        const input = this.partedInput(x, parts.bounds, parts.inputs);
        try {
          e = await this.host.runParted(req, input, target);
        } finally {
          input.dispose();
        }
      }
      // A transport that copies its input takes the mapped read-back as is (it lands in its slot).
      else
        e = this.host.copiesInput
          ? await withMappedTensor(this.device, x, run, this.options.mapAfterMs)
          : await run(await readTensor(this.device, x, this.options.mapAfterMs));
      y = finish();
      // Chromium hands queued WebGPU commands (and writeBuffer's bytes) to its GPU process in a
      // microtask: awaited here, that transfer (0.1–2 ms at 64 KiB, t = 4, on this thread) falls
      // in the upload phase, not in the next call (docs/ranks.md).
      await Promise.resolve();
    } catch (err) {
      abandon();
      throw err;
    }
    // The upload is submitted, not awaited: the device queue runs it before any later work on
    // this device (a stream-ordered collective), and a pooled upload buffer is reused only once
    // its re-map, which waits for the copy, has finished. Its phase runs from the ring's last
    // phase: the writes the gather queued reach the GPU process once the ring yields.
    const t3 = sharedNow();
    const t2 = e.phases.at(-1)?.t1 ?? t1;
    const phases: TracePhase[] = [
      ...(parts ? [] : [{ name: 'readback', t0, t1 }]),
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

  ringExchange(x: GpuTensor, tensor?: string, out?: GpuTensor): Promise<GpuTensor> {
    return this.traced({ op: 'ringExchange', shape: x.shape, ...named(tensor) }, x, out);
  }

  /** See AllToAll; counts to exchange (recv absent) go over the host communicator, as host numbers. */
  async allToAll(x: GpuTensor, splits?: AllToAllSplits, tensor?: string, out?: GpuTensor): Promise<GpuTensor> {
    const s = await resolveSplits(this.host, x.shape, splits, tensor);
    return this.traced({ op: 'allToAll', shape: x.shape, splits: s, ...named(tensor) }, x, out);
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

  /**
   * Point-to-point on GPU tensors: every send read back, the batch moved on the host
   * (CollectiveRunner.batchIsendIrecv, fingerprinted there), every received tensor uploaded into a
   * new tensor the caller owns (named by its recv op's tensor, else "p2p.recv").
   */
  async batchIsendIrecv(ops: readonly P2POp<GpuTensor>[]): Promise<GpuTensor[]> {
    const onHost = await Promise.all(
      ops.map(
        async (o): Promise<P2POp<HostTensor>> =>
          o.op === 'send' ? { ...o, x: hostTensor(o.x.shape, await readTensor(this.device, o.x)) } : o,
      ),
    );
    const got = await this.host.batchIsendIrecv(onHost);
    const recvs = ops.filter((o) => o.op === 'recv');
    return got.map((y, i) => createTensor(this.device, recvs[i]!.tensor ?? 'p2p.recv', y.shape, y.data));
  }

  async send(x: GpuTensor, peer: number, tensor?: string): Promise<void> {
    await this.batchIsendIrecv([{ op: 'send', peer, x, ...named(tensor) }]);
  }

  async recv(shape: readonly number[], peer: number, tensor?: string): Promise<GpuTensor> {
    const [y] = await this.batchIsendIrecv([{ op: 'recv', peer, shape, ...named(tensor) }]);
    return y!;
  }
}
