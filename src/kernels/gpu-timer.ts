import type { KernelContext } from './context.ts';

/**
 * GPU time of one op: from its first compute pass's beginning to its last pass's end (one pass
 * for most kernels; a GEMM that stages its operands first is three, and the span includes any
 * copy between them).
 */
export interface DispatchTime {
  readonly op: string;
  readonly ns: number;
}

/** What one timed stretch of dispatches measured. */
export interface TimerResult {
  readonly times: DispatchTime[];
  /**
   * True when every timestamp is a multiple of 100 µs: Chrome quantizes timestamp queries to
   * 100 µs unless WebGPU developer features are on, and such times are only good for long passes.
   */
  readonly quantized: boolean;
}

/** WebGPU's largest query set (queries per GPUQuerySet). */
const maxQueries = 4096;

/** Chrome's timestamp quantum when developer features are off, in ns. */
export const timestampQuantumNs = 100_000n;

/**
 * Times every op encoded on `ctx` between start() and stop() with timestamp queries (requires the
 * device feature `timestamp-query`): each compute pass writes its begin and end, and consecutive
 * passes of one op (KernelContext.op) make one time.
 */
export class GpuTimer {
  private readonly querySet: GPUQuerySet;
  private readonly resolve: GPUBuffer;
  private ops: { op: string; id: number; first: number; last: number }[] = [];
  private passes = 0;

  /** Whether this device can time passes (the `timestamp-query` feature was requested). */
  static available(device: GPUDevice): boolean {
    return device.features.has('timestamp-query');
  }

  constructor(
    private readonly ctx: KernelContext,
    private readonly capacity = 512,
  ) {
    if (!GpuTimer.available(ctx.device)) {
      throw new Error(
        'GpuTimer: this device has no "timestamp-query" feature; request it in requestDevice, or time with the wall clock.',
      );
    }
    if (!Number.isInteger(capacity) || capacity < 1 || 2 * capacity > maxQueries) {
      throw new Error(
        `GpuTimer: capacity ${capacity} must be an integer from 1 to ${maxQueries / 2} (two timestamps per dispatch, at most ${maxQueries} queries in a WebGPU query set).`,
      );
    }
    this.querySet = ctx.device.createQuerySet({ type: 'timestamp', count: 2 * capacity });
    this.resolve = ctx.device.createBuffer({
      size: 16 * capacity,
      usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
    });
  }

  /** Starts attaching timestamp writes to the next dispatches (at most `capacity`). */
  start(): void {
    this.ops = [];
    this.passes = 0;
    this.ctx.observer = (op, id) => {
      const i = this.passes++;
      if (i >= this.capacity)
        throw new Error(
          `GpuTimer: more than ${this.capacity} dispatches in one timed stretch; stop() and start() again.`,
        );
      const last = this.ops.at(-1);
      if (last && last.id === id) last.last = i;
      else this.ops.push({ op, id, first: i, last: i });
      return { querySet: this.querySet, beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 };
    };
  }

  /** Stops timing, submits, and reads the times of the dispatches since start(). */
  async stop(): Promise<TimerResult> {
    this.ctx.observer = undefined;
    const n = this.passes;
    if (n === 0) return { times: [], quantized: false };
    const enc = this.ctx.commandEncoder();
    enc.resolveQuerySet(this.querySet, 0, 2 * n, this.resolve, 0);
    const read = this.ctx.device.createBuffer({
      size: 16 * n,
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    });
    enc.copyBufferToBuffer(this.resolve, 0, read, 0, 16 * n);
    await this.ctx.flush();
    await read.mapAsync(GPUMapMode.READ);
    const stamps = new BigUint64Array(read.getMappedRange().slice(0));
    read.destroy();
    const times = this.ops.map((o) => ({ op: o.op, ns: Number(stamps[2 * o.last + 1] - stamps[2 * o.first]) }));
    const quantized = stamps.every((t) => t % timestampQuantumNs === 0n);
    return { times, quantized };
  }

  /** Frees the query set and its buffer. */
  destroy(): void {
    this.querySet.destroy();
    this.resolve.destroy();
  }
}
