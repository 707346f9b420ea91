import { describe, expect, test } from 'vitest';
import { StagingPool, stagingClassBytes } from '../../../src/kernels/staging-pool.ts';
import { createTensor, readTensor } from '../../../src/kernels/tensor.ts';
import { testDevice } from '../gpu-case.ts';

describe('staging pool', () => {
  test('size classes are powers of two of at least 4 KiB; a bad size is refused', () => {
    expect([1, 4096, 4097, 1 << 20, (1 << 20) + 4].map(stagingClassBytes)).toEqual([
      4096,
      4096,
      8192,
      1 << 20,
      2 << 20,
    ]);
    expect(() => stagingClassBytes(0)).toThrow('cannot stage 0 bytes');
  });

  test('a released read-back buffer is reused for the same class, not for another', async () => {
    const pool = new StagingPool(await testDevice());
    const a = pool.acquireRead(5000);
    expect(a.size).toBe(8192);
    pool.release(a);
    expect(pool.idleBytesNow).toBe(8192);
    expect(pool.acquireRead(6000)).toBe(a);
    const b = pool.acquireRead(100);
    expect(b).not.toBe(a);
    await pool.dispose();
  });

  test('an upload buffer comes back mapped, and only after its re-map; what was written reaches the copy', async () => {
    const device = await testDevice();
    const pool = new StagingPool(device);
    const dst = createTensor(device, 'dst', [4]);
    for (const round of [1, 2]) {
      const w = pool.acquireWrite(16);
      expect(w.mapState).toBe('mapped');
      new Float32Array(w.getMappedRange(0, 16)).set([round, 2, 3, 4]);
      w.unmap();
      const enc = device.createCommandEncoder();
      enc.copyBufferToBuffer(w, 0, dst.buffer, 0, 16);
      device.queue.submit([enc.finish()]);
      pool.release(w);
      if (round === 1) expect(pool.idleBytesNow).toBe(0); // re-mapping, not idle yet
      expect(Array.from(await readTensor(device, dst))).toEqual([round, 2, 3, 4]);
      await device.queue.onSubmittedWorkDone();
      await new Promise((r) => setTimeout(r, 0));
    }
    dst.buffer.destroy();
    await pool.dispose();
  });

  test('the pool shrinks: idle bytes beyond the cap are destroyed oldest first, and trim empties it', async () => {
    const pool = new StagingPool(await testDevice(), 3 * 4096);
    const bufs = [0, 1, 2, 3].map(() => pool.acquireRead(4096));
    bufs.forEach((b) => pool.release(b));
    expect(pool.idleBytesNow).toBe(3 * 4096);
    // The oldest (first released) was destroyed: the next three acquisitions are the other three.
    const again = [0, 1, 2].map(() => pool.acquireRead(4096));
    expect(new Set(again)).toEqual(new Set(bufs.slice(1)));
    again.forEach((b) => pool.release(b));
    pool.trim();
    expect(pool.idleBytesNow).toBe(0);
    await pool.dispose();
  });

  test('a buffer not taken again within maxIdleAcquisitions is destroyed, on the release after the last one', async () => {
    const pool = new StagingPool(await testDevice(), 1 << 30, 2);
    const old = pool.acquireRead(8192); // acquisition 1, released at 1
    pool.release(old);
    // Acquisitions 2 and 3 (1 and 2 after its release) keep it; the release after acquisition 4 destroys it.
    const idle: number[] = [];
    for (let i = 0; i < 3; i++) {
      pool.release(pool.acquireRead(4096));
      idle.push(pool.idleBytesNow);
    }
    expect(idle).toEqual([8192 + 4096, 8192 + 4096, 4096]);
    expect(pool.heldBytesNow).toBe(4096);
    expect(pool.acquireRead(8192)).not.toBe(old);
    await pool.dispose();
  });
});

describe('staging pool lifetimes: what it holds, from acquire to destroy', () => {
  test('held bytes count lent, idle and re-mapping buffers, and fall only when one is destroyed', async () => {
    const device = await testDevice();
    const pool = new StagingPool(device, 8192);
    const r = pool.acquireRead(4096);
    const w = pool.acquireWrite(8192);
    expect([pool.heldBytesNow, pool.idleBytesNow]).toEqual([4096 + 8192, 0]);
    pool.release(r);
    expect([pool.heldBytesNow, pool.idleBytesNow]).toEqual([4096 + 8192, 4096]);
    // Re-mapping: held, not idle; once mapped it is idle, and 4096 + 8192 idle is past the 8192 cap,
    // so the oldest (the read-back buffer) is destroyed.
    w.unmap();
    pool.release(w);
    expect([pool.heldBytesNow, pool.idleBytesNow]).toEqual([4096 + 8192, 4096]);
    await device.queue.onSubmittedWorkDone();
    await new Promise((x) => setTimeout(x, 0));
    expect([pool.heldBytesNow, pool.idleBytesNow]).toEqual([8192, 8192]);
    expect(pool.acquireWrite(5000)).toBe(w);
    expect(w.mapState).toBe('mapped');
    pool.release(w);
    await pool.dispose();
  });

  test('dispose destroys the idle buffers at once and each lent one when it comes back; the pool then refuses work', async () => {
    const device = await testDevice();
    const pool = new StagingPool(device);
    const lent = pool.acquireRead(4096);
    const upload = pool.acquireWrite(4096);
    pool.release(pool.acquireRead(16384));
    expect(pool.heldBytesNow).toBe(4096 + 4096 + 16384);
    await pool.dispose();
    expect([pool.heldBytesNow, pool.idleBytesNow]).toEqual([4096 + 4096, 0]);
    pool.release(lent);
    expect([pool.heldBytesNow, pool.idleBytesNow]).toEqual([4096, 0]);
    // A destroyed buffer cannot be mapped.
    await expect(lent.mapAsync(GPUMapMode.READ)).rejects.toThrow();
    upload.unmap();
    pool.release(upload);
    expect(pool.heldBytesNow).toBe(0);
    expect(() => pool.acquireRead(4096)).toThrow('used after dispose');
  });

  test('an upload buffer still re-mapping when the pool is disposed is destroyed once its map ends, not kept; dispose resolves only then', async () => {
    // Dawn for Node aborts the process when a device is destroyed, or its thread ends, under a
    // pending mapAsync: a rank awaits dispose before destroying its device.
    const device = await testDevice();
    const pool = new StagingPool(device);
    const w = pool.acquireWrite(4096);
    w.unmap();
    pool.release(w);
    expect(w.mapState).toBe('pending');
    const disposed = pool.dispose();
    expect([pool.heldBytesNow, pool.idleBytesNow]).toEqual([4096, 0]);
    await disposed;
    expect([pool.heldBytesNow, pool.idleBytesNow]).toEqual([0, 0]);
    expect(w.mapState).toBe('unmapped');
  });

  test("a buffer the pool did not make is refused, and another pool's too", async () => {
    const device = await testDevice();
    const pool = new StagingPool(device);
    const other = new StagingPool(device);
    const foreign = device.createBuffer({
      label: 'foreign',
      size: 4096,
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    });
    expect(() => pool.release(foreign)).toThrow('buffer "foreign" was not acquired from this pool');
    const theirs = other.acquireRead(4096);
    expect(() => pool.release(theirs)).toThrow('was not acquired from this pool');
    other.release(theirs);
    foreign.destroy();
    await pool.dispose();
    await other.dispose();
  });
});
