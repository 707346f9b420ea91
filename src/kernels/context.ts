/** One storage or uniform buffer, or a texture view, bound at `binding` of group 0. */
export type Binding =
  | { readonly binding: number; readonly buffer: GPUBuffer }
  | { readonly binding: number; readonly view: GPUTextureView };

/** Bindings of a kernel whose uniform is binding 0 and whose buffers follow at bindings 1, 2, … in order. */
export function uniformThen(uniform: GPUBuffer, buffers: readonly GPUBuffer[]): Binding[] {
  return [{ binding: 0, buffer: uniform }, ...buffers.map((buffer, i) => ({ binding: i + 1, buffer }))];
}

/**
 * Called once per dispatch, in submission order, with the op it belongs to (see KernelContext.op:
 * the dispatches of one op share `id`); lets a profiler attach timestamp writes.
 */
export type PassObserver = (op: string, id: number) => GPUComputePassTimestampWrites | undefined;

/**
 * Compiled shader modules (by label) and pipelines (by label, entry point and override constants),
 * per device: every KernelContext on a device reuses what another compiled (SwiftShader takes
 * 40–1000 ms a GEMM pipeline; a test case's fresh context would otherwise pay it again).
 */
interface Compiled {
  readonly modules: Map<string, GPUShaderModule>;
  readonly pipelines: Map<string, GPUComputePipeline>;
}
const compiledOn = new WeakMap<GPUDevice, Compiled>();

function compiledFor(device: GPUDevice): Compiled {
  let c = compiledOn.get(device);
  if (!c) compiledOn.set(device, (c = { modules: new Map(), pipelines: new Map() }));
  return c;
}

/**
 * A device plus the command encoder that kernels append to. Pipelines are compiled once per
 * device and (shader, entry point, override constants); every dispatch gets its own compute pass
 * so a profiler can time it. `flush()` submits what was encoded.
 */
export class KernelContext {
  private encoder: GPUCommandEncoder | undefined;
  private readonly compiled: Compiled;
  private transient: (GPUBuffer | GPUTexture)[] = [];
  private readonly scratch = new Map<string, GPUTexture>();
  private current: { readonly label: string; readonly id: number } | undefined;
  private ops = 0;
  private unused: GPUBuffer | undefined;
  observer: PassObserver | undefined;
  /** Kernel dispatches encoded on this context so far (empty ones skipped). */
  dispatches = 0;
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
  /**
   * While set, each dispatch becomes its own command buffer, submitted as usual (submit, flush):
   * passes of one command buffer may run concurrently on SwiftShader, stretching each pass's
   * timestamps, so a step timed while its collectives run (and cannot be held) sets this instead.
   */
  passPerCommandBuffer = false;
  private readonly held: GPUCommandBuffer[] = [];

  constructor(readonly device: GPUDevice) {
    this.compiled = compiledFor(device);
  }

  /** The compute pipeline of `entryPoint` in `code`, specialised by `constants`; compiled once. */
  pipeline(
    label: string,
    code: string,
    entryPoint: string,
    constants: Record<string, number> = {},
  ): GPUComputePipeline {
    const key = `${label}|${entryPoint}|${JSON.stringify(constants)}`;
    let p = this.compiled.pipelines.get(key);
    if (!p) {
      let module = this.compiled.modules.get(label);
      if (!module) {
        module = this.device.createShaderModule({ label, code });
        this.compiled.modules.set(label, module);
      }
      p = this.device.createComputePipeline({
        label: key,
        layout: 'auto',
        compute: { module, entryPoint, constants },
      });
      this.compiled.pipelines.set(key, p);
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

  /**
   * Runs `body` as one op named `label` ("qkv.dgrad"): every dispatch it encodes reaches the
   * observer under that name and one id, so a profiler times them as one (a GEMM whose operands
   * are staged first is three passes). Inside another op, `body` joins the outer one.
   */
  op<T>(label: string, body: () => T): T {
    if (this.current) return body();
    this.current = { label, id: ++this.ops };
    try {
      return body();
    } finally {
      this.current = undefined;
    }
  }

  /**
   * A texture of at least `size` (width, height, layers) kept under `key` for reuse by later
   * kernels: work encoded on one device runs in order, so a reuse never overtakes an earlier
   * reader. Grown to the larger of each dim when asked for more; the old one is freed after the
   * next flush completes.
   */
  scratchTexture(
    key: string,
    size: readonly [number, number, number],
    format: GPUTextureFormat,
    usage: GPUTextureUsageFlags,
  ): GPUTexture {
    const old = this.scratch.get(key);
    if (old && old.width >= size[0] && old.height >= size[1] && old.depthOrArrayLayers >= size[2]) return old;
    const grown: [number, number, number] = old
      ? [Math.max(old.width, size[0]), Math.max(old.height, size[1]), Math.max(old.depthOrArrayLayers, size[2])]
      : [size[0], size[1], size[2]];
    if (old) this.transient.push(old);
    const t = this.device.createTexture({ label: key, size: grown, format, usage });
    this.scratch.set(key, t);
    return t;
  }

  /**
   * An empty compute pass in the current op (or one of its own): opens the op's time span before
   * work that is not a pass (a copy), so a profiler counts that work in the op.
   */
  mark(op: string): void {
    this.pass(op, () => {});
  }

  /** Encodes one compute pass (timestamped for the current op, or one of its own) around `body`. */
  private pass(op: string, body: (pass: GPUComputePassEncoder) => void): void {
    const owner = this.current ?? { label: op, id: ++this.ops };
    this.encoder ??= this.device.createCommandEncoder();
    const pass = this.encoder.beginComputePass({ label: op, timestampWrites: this.observer?.(owner.label, owner.id) });
    body(pass);
    pass.end();
    if (this.holdUntilFlush || this.passPerCommandBuffer) this.finishEncoder();
  }

  /** Encodes one dispatch of `workgroups` workgroups in its own compute pass (one op unless within op()). */
  dispatch(
    op: string,
    pipeline: GPUComputePipeline,
    bindings: readonly Binding[],
    workgroups: readonly [number, number, number],
  ): void {
    if (workgroups.some((w) => w === 0)) return; // empty tensors: nothing to compute
    this.dispatches++;
    const bindGroup = this.device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: bindings.map((b) => ({ binding: b.binding, resource: 'view' in b ? b.view : { buffer: b.buffer } })),
    });
    this.pass(op, (pass) => {
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, bindGroup);
      pass.dispatchWorkgroups(workgroups[0], workgroups[1], workgroups[2]);
    });
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
