/** How a result goes up to the GPU. */
export type UploadPath = 'write-buffer' | 'mapped';

/** Options of the GPU collectives (the bench varies them; the defaults are what measured fastest here). */
export interface GpuCollectiveOptions {
  /**
   * Bytes per pipeline part: a collective the transport moves in parts (partedOps) is read back,
   * moved and uploaded part by part, so part k + 1's read-back and part k − 1's upload proceed
   * while part k is in the ring. Infinity: one part (read back whole, then move, then upload).
   */
  readonly partBytes: number;
  /**
   * 'write-buffer': queue.writeBuffer straight from the transport's memory; 'mapped': into pooled
   * upload buffers kept mapped between calls, then one copy per part into the result.
   */
  readonly upload: UploadPath;
  /**
   * Milliseconds between submitting a read-back's copies and mapping its staging buffers.
   * Chromium's GPU process answers a `mapAsync` at once when the copy before it has finished by
   * the time the map command is handled; otherwise only at the device's next poll, which it
   * schedules 2 ms after the last command it received for that device (kHandleMoreWorkPeriodMs in
   * its command-buffer stub, gpu/ipc/service/). A copy and a map sent together reach the GPU
   * process together, so with every rank reading back at once the map misses and waits for the
   * poll; mapped a little later, it finds the copy done. 0: map at once.
   */
  readonly mapAfterMs: number;
}

/** The defaults: see docs/ranks.md for the measurements behind them. */
export const defaultGpuCollectiveOptions: GpuCollectiveOptions = {
  partBytes: 4 << 20,
  upload: 'write-buffer',
  mapAfterMs: 0.2,
};
