import type { KernelContext } from '../kernels/context.ts';
import { gemmStrided } from '../kernels/gemm.ts';
import { runKernel } from '../kernels/gpu-kernels.ts';
import { createTensor, readTensor, type GpuTensor } from '../kernels/tensor.ts';
import type { GemmProblem } from '../reference/gemm.ts';
import type { KernelSpec } from '../reference/kernel-spec.ts';
import type { Backend, OpSpec } from '../parallel/backend.ts';
import type { KernelName, OpPhase } from '../parallel/plan-types.ts';

/** The layer on WebGPU: every op is one kernel dispatch named by its op's label (ctx.scope) for timing. */
export class GpuBackend implements Backend<GpuTensor> {
  readonly kind = 'gpu';
  phase: OpPhase = 'forward';
  private readonly live = new Set<GpuTensor>();
  /** Σ buffer size of `live`, bytes. */
  private held = 0;
  /** The most bytes of buffers this backend held at once (made or adopted, not yet freed). */
  peakBytes = 0;

  /**
   * `deferRelease`: release() keeps each buffer until releaseAll (needed while ctx.holdUntilFlush
   * holds work that uses it). `ownedElsewhere`: tensors another owner frees (collective results
   * reused from step to step, ResultTensors), which release() leaves alone.
   */
  constructor(
    readonly ctx: KernelContext,
    private readonly opts: {
      readonly deferRelease?: boolean;
      readonly ownedElsewhere?: (t: GpuTensor) => boolean;
    } = {},
  ) {}

  /** Takes ownership of a tensor made elsewhere (a collective's result), freed by releaseAll. */
  adopt(t: GpuTensor): void {
    this.hold(t);
  }

  /** Bytes of the buffers this backend holds now (made or adopted, not yet freed). */
  get liveBytes(): number {
    return this.held;
  }

  private hold(t: GpuTensor): void {
    if (this.live.has(t)) return;
    this.live.add(t);
    this.held += t.buffer.size;
    this.peakBytes = Math.max(this.peakBytes, this.held);
  }

  /** Frees every tensor this backend made or adopted and has not released. */
  releaseAll(): void {
    this.ctx.submit();
    for (const t of this.live) t.buffer.destroy();
    this.live.clear();
    this.held = 0;
  }

  private run(op: OpSpec, body: () => void): void {
    this.ctx.op(op.label, body);
  }

  tensor(name: string, shape: readonly number[], data?: Float32Array | Float64Array): GpuTensor {
    const t = createTensor(this.ctx.device, name, shape, data instanceof Float64Array ? Float32Array.from(data) : data);
    this.hold(t);
    return t;
  }
  shapeOf(t: GpuTensor): readonly number[] {
    return t.shape;
  }
  async read(t: GpuTensor): Promise<Float32Array> {
    await this.ctx.flush();
    return readTensor(this.ctx.device, t);
  }
  release(t: GpuTensor): void {
    if (this.opts.deferRelease || this.opts.ownedElsewhere?.(t)) return; // freed by releaseAll, or by its owner
    this.ctx.submit();
    if (this.live.delete(t)) this.held -= t.buffer.size;
    t.buffer.destroy();
  }
  kernel<A>(op: OpSpec, spec: KernelSpec<KernelName, A>, tensors: readonly GpuTensor[], args: A): void {
    this.run(op, () => runKernel(this.ctx, spec, tensors, args));
  }
  gemm(op: OpSpec, p: GemmProblem, a: GpuTensor, b: GpuTensor, c: GpuTensor): void {
    this.run(op, () => gemmStrided(this.ctx, p, a, b, c));
  }
  flush(): Promise<void> {
    return this.ctx.flush();
  }
}
