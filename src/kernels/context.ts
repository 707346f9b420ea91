/** One storage or uniform buffer bound at `binding` of group 0. */
export interface Binding {
  readonly binding: number;
  readonly buffer: GPUBuffer;
}

/** Bindings of a kernel whose uniform is binding 0 and whose buffers follow at bindings 1, 2, … in order. */
export function uniformThen(uniform: GPUBuffer, buffers: readonly GPUBuffer[]): Binding[] {
  return [{ binding: 0, buffer: uniform }, ...buffers.map((buffer, i) => ({ binding: i + 1, buffer }))];
}

/** Called once per dispatch, in submission order; lets a profiler attach timestamp writes. */
export type PassObserver = (op: string) => GPUComputePassTimestampWrites | undefined;

/**
 * A device plus the command encoder that kernels append to. Pipelines are cached per
 * (shader, entry point, override constants); every dispatch gets its own compute pass so a
 * profiler can time it. `flush()` submits what was encoded.
 */
export class KernelContext {
  private encoder: GPUCommandEncoder | undefined;
  private readonly pipelines = new Map<string, GPUComputePipeline>();
  private readonly modules = new Map<string, GPUShaderModule>();
  private transient: GPUBuffer[] = [];
  private unused: GPUBuffer | undefined;
  observer: PassObserver | undefined;
  /**
   * While set, each dispatch becomes its own command buffer and nothing reaches the queue before
   * flush(), which submits them all in one submission with this thread idle. For timing kernels on
   * an adapter that runs on the CPU (SwiftShader): no kernel then runs while the step is still being
   * encoded on the same cores; no two passes overlap (one command buffer may run independent passes
   * concurrently, stretching each pass's timestamps); and no kernel runs while the GPU process still
   * records later submissions (one submission per kernel made the first GEMM after each flush read
   * 15–50% slower than its same-shape twins). Buffers used by held work must outlive flush().
   */
  holdUntilFlush = false;
  private readonly held: GPUCommandBuffer[] = [];
  /** Name of the caller's current op ("qkv.dgrad"); passed to the observer instead of the kernel's own label. */
  scope: string | undefined;

  constructor(readonly device: GPUDevice) {}

  /** The compute pipeline of `entryPoint` in `code`, specialised by `constants`; compiled once. */
  pipeline(
    label: string,
    code: string,
    entryPoint: string,
    constants: Record<string, number> = {},
  ): GPUComputePipeline {
    const key = `${label}|${entryPoint}|${JSON.stringify(constants)}`;
    let p = this.pipelines.get(key);
    if (!p) {
      let module = this.modules.get(label);
      if (!module) {
        module = this.device.createShaderModule({ label, code });
        this.modules.set(label, module);
      }
      p = this.device.createComputePipeline({
        label: key,
        layout: 'auto',
        compute: { module, entryPoint, constants },
      });
      this.pipelines.set(key, p);
    }
    return p;
  }

  /** A uniform buffer holding `data` (u32/f32 words), freed after the next flush completes. */
  uniform(data: ArrayBufferView<ArrayBuffer>): GPUBuffer {
    const size = Math.max(16, Math.ceil(data.byteLength / 16) * 16);
    const buffer = this.device.createBuffer({ size, usage: GPUBufferUsage.UNIFORM, mappedAtCreation: true });
    new Uint8Array(buffer.getMappedRange()).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    buffer.unmap();
    this.transient.push(buffer);
    return buffer;
  }

  /** Encodes one dispatch of `workgroups` workgroups in its own compute pass. */
  dispatch(
    op: string,
    pipeline: GPUComputePipeline,
    bindings: readonly Binding[],
    workgroups: readonly [number, number, number],
  ): void {
    if (workgroups.some((w) => w === 0)) return; // empty tensors: nothing to compute
    const bindGroup = this.device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: bindings.map(({ binding, buffer }) => ({ binding, resource: { buffer } })),
    });
    this.encoder ??= this.device.createCommandEncoder();
    const pass = this.encoder.beginComputePass({ label: op, timestampWrites: this.observer?.(this.scope ?? op) });
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bindGroup);
    pass.dispatchWorkgroups(workgroups[0], workgroups[1], workgroups[2]);
    pass.end();
    if (this.holdUntilFlush) this.finishEncoder();
  }

  /** A 4-byte storage buffer for optional bindings left unused (e.g. gemm without bias). */
  placeholder(): GPUBuffer {
    this.unused ??= this.device.createBuffer({ label: 'placeholder', size: 16, usage: GPUBufferUsage.STORAGE });
    return this.unused;
  }

  /** The encoder kernels append to (for copies and timestamp resolves between dispatches). */
  commandEncoder(): GPUCommandEncoder {
    this.encoder ??= this.device.createCommandEncoder();
    return this.encoder;
  }

  /** Submits everything encoded (and held) so far; resolves when the GPU has finished it. */
  async flush(): Promise<void> {
    this.finishEncoder();
    this.submitHeld();
    await this.device.queue.onSubmittedWorkDone();
  }

  /** Submits everything encoded so far without waiting (while holdUntilFlush is set: holds it). */
  submit(): void {
    this.finishEncoder();
    if (!this.holdUntilFlush) this.submitHeld();
  }

  private finishEncoder(): void {
    if (this.encoder) {
      this.held.push(this.encoder.finish());
      this.encoder = undefined;
    }
  }

  /** Submits the held command buffers, in order, in one submission, and frees this stretch's uniforms once they ran. */
  private submitHeld(): void {
    const cbs = this.held.splice(0);
    if (cbs.length) this.device.queue.submit(cbs);
    const done = this.transient;
    this.transient = [];
    if (done.length) void this.device.queue.onSubmittedWorkDone().then(() => done.forEach((b) => b.destroy()));
  }
}
