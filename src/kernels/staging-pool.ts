/** Smallest staging buffer the pool hands out (bytes); smaller requests share this class. */
const minClassBytes = 4096;

/** Default most idle bytes one device's pool keeps (read-back and upload buffers together). */
export const defaultMaxIdleBytes = 64 << 20;

/** Default: an idle buffer not taken again within this many acquisitions is destroyed. */
export const defaultMaxIdleAcquisitions = 256;

/** The size class of a request: the next power of two ≥ bytes (at least 4 KiB). */
export function stagingClassBytes(bytes: number): number {
  if (!(Number.isInteger(bytes) && bytes > 0)) throw new Error(`staging pool: cannot stage ${bytes} bytes.`);
  return Math.max(minClassBytes, 2 ** Math.ceil(Math.log2(bytes)));
}

type Kind = 'read' | 'write';
interface Idle {
  readonly buffer: GPUBuffer;
  readonly kind: Kind;
  readonly bytes: number;
  /** The acquisition count when it was released (for ageing out). */
  readonly since: number;
}

/**
 * Staging buffers of one GPUDevice, pooled per size class and reused across calls: read-back
 * buffers (MAP_READ | COPY_DST, idle unmapped) and upload buffers (MAP_WRITE | COPY_SRC, idle
 * *mapped*, so a writer fills them synchronously). A fresh staging buffer costs its memory's
 * first touch on every call (on SwiftShader a page fault per 4 KiB in two processes); a pooled
 * one is already resident. The pool shrinks on every release: idle buffers beyond `maxIdleBytes`
 * (oldest first) and any not taken again within `maxIdleAcquisitions` are destroyed.
 */
export class StagingPool {
  private readonly idle: Idle[] = [];
  private idleBytes = 0;
  private heldBytes = 0;
  private acquisitions = 0;
  private disposed = false;
  /** Upload buffers being re-mapped after use, each with its settled map; they join `idle` once mapped. */
  private readonly remapping = new Map<GPUBuffer, Promise<void>>();
  private readonly kinds = new WeakMap<GPUBuffer, Kind>();
  /** Per buffer held (lent, re-mapping or idle): the acquisition count when it was last taken. */
  private readonly taken = new Map<GPUBuffer, number>();

  constructor(
    private readonly device: GPUDevice,
    readonly maxIdleBytes = defaultMaxIdleBytes,
    readonly maxIdleAcquisitions = defaultMaxIdleAcquisitions,
  ) {}

  /** An unmapped read-back buffer of at least `bytes` (MAP_READ | COPY_DST). */
  acquireRead(bytes: number): GPUBuffer {
    return this.take('read', bytes) ?? this.create('read', stagingClassBytes(bytes));
  }

  /**
   * A mapped upload buffer of at least `bytes` (MAP_WRITE | COPY_SRC): a pooled one whose re-map
   * has finished, else a new one mapped at creation. Write its mapped range, unmap, copy, release.
   */
  acquireWrite(bytes: number): GPUBuffer {
    return this.take('write', bytes) ?? this.create('write', stagingClassBytes(bytes));
  }

  /**
   * Gives a buffer back once the GPU work that uses it is submitted. A read-back buffer is
   * unmapped here; an upload buffer is re-mapped for writing (after the copies that read it
   * finish) and only then reused.
   */
  release(buffer: GPUBuffer): void {
    const kind = this.kinds.get(buffer);
    if (!kind) throw new Error(`staging pool: buffer "${buffer.label}" was not acquired from this pool.`);
    if (this.disposed) return this.destroy(buffer);
    if (kind === 'read') {
      if (buffer.mapState !== 'unmapped') buffer.unmap();
      return this.keep(buffer, kind);
    }
    if (buffer.mapState === 'mapped') buffer.unmap();
    const settled = buffer.mapAsync(GPUMapMode.WRITE).then(
      () => {
        this.remapping.delete(buffer);
        if (this.disposed) this.destroy(buffer);
        else this.keep(buffer, kind);
      },
      () => {
        // Destroyed or device lost while re-mapping: nothing to keep.
        this.remapping.delete(buffer);
        this.destroy(buffer);
      },
    );
    this.remapping.set(buffer, settled);
  }

  /** Destroys idle buffers until at most `maxIdleBytes` stay (all of them by default). */
  trim(maxIdleBytes = 0): void {
    while (this.idleBytes > maxIdleBytes && this.idle.length) this.drop(0);
  }

  /** Bytes of the buffers idle in the pool now (re-mapping ones not counted). */
  get idleBytesNow(): number {
    return this.idleBytes;
  }

  /** Bytes of every buffer the pool has made and not destroyed: lent out, re-mapping or idle. */
  get heldBytesNow(): number {
    return this.heldBytes;
  }

  /** Acquisitions so far: a mark for `heldBytesSince`. */
  get acquisitionsNow(): number {
    return this.acquisitions;
  }

  /**
   * Bytes of the buffers held now (lent, re-mapping or idle) that were taken after the mark
   * `since` (an earlier acquisitionsNow): what the work since the mark staged through the pool,
   * without the idle buffers earlier work left behind.
   */
  heldBytesSince(since: number): number {
    let bytes = 0;
    for (const [buffer, at] of this.taken) if (at > since) bytes += buffer.size;
    return bytes;
  }

  /**
   * Destroys every idle buffer; buffers still lent out are destroyed when released. Resolves once
   * every re-map in flight has settled (and its buffer is destroyed): a device destroyed, or a
   * thread ended, under a pending mapAsync aborts Dawn for Node ("Promise not resolved or rejected").
   */
  async dispose(): Promise<void> {
    this.disposed = true;
    this.trim(0);
    await Promise.all(this.remapping.values());
  }

  private take(kind: Kind, bytes: number): GPUBuffer | undefined {
    this.acquisitions++;
    if (this.disposed) throw new Error('staging pool: used after dispose.');
    const want = stagingClassBytes(bytes);
    const i = this.idle.findIndex((e) => e.kind === kind && e.bytes === want);
    if (i < 0) return undefined;
    const [e] = this.idle.splice(i, 1);
    this.idleBytes -= e.bytes;
    this.taken.set(e.buffer, this.acquisitions);
    return e.buffer;
  }

  private create(kind: Kind, bytes: number): GPUBuffer {
    const buffer = this.device.createBuffer({
      label: `staging.${kind}.${bytes}`,
      size: bytes,
      usage:
        kind === 'read'
          ? GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST
          : GPUBufferUsage.MAP_WRITE | GPUBufferUsage.COPY_SRC,
      mappedAtCreation: kind === 'write',
    });
    this.kinds.set(buffer, kind);
    this.taken.set(buffer, this.acquisitions);
    this.heldBytes += bytes;
    return buffer;
  }

  private keep(buffer: GPUBuffer, kind: Kind): void {
    this.idle.push({ buffer, kind, bytes: buffer.size, since: this.acquisitions });
    this.idleBytes += buffer.size;
    // Shrink: the oldest beyond the byte cap, and any left untaken for too long.
    this.trim(this.maxIdleBytes);
    for (let i = this.idle.length - 1; i >= 0; i--)
      if (this.acquisitions - this.idle[i].since > this.maxIdleAcquisitions) this.drop(i);
  }

  private drop(i: number): void {
    const [e] = this.idle.splice(i, 1);
    this.idleBytes -= e.bytes;
    this.destroy(e.buffer);
  }

  private destroy(buffer: GPUBuffer): void {
    this.heldBytes -= buffer.size;
    this.taken.delete(buffer);
    buffer.destroy();
  }
}

const pools = new WeakMap<GPUDevice, StagingPool>();

/** The staging pool of `device` (one per device, created on first use). */
export function stagingPool(device: GPUDevice): StagingPool {
  let p = pools.get(device);
  if (!p) pools.set(device, (p = new StagingPool(device)));
  return p;
}

/**
 * Destroys `device`'s pooled staging buffers and forgets the pool; resolves once its re-maps in
 * flight have settled (await it before the device is destroyed).
 */
export async function disposeStagingPool(device: GPUDevice): Promise<void> {
  const pool = pools.get(device);
  pools.delete(device);
  await pool?.dispose();
}
