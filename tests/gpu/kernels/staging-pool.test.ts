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
    pool.dispose();
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
    pool.dispose();
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
    pool.dispose();
  });

  test('a buffer not taken again within maxIdleAcquisitions is destroyed', async () => {
    const pool = new StagingPool(await testDevice(), 1 << 30, 2);
    const old = pool.acquireRead(8192);
    pool.release(old);
    for (let i = 0; i < 3; i++) pool.release(pool.acquireRead(4096));
    expect(pool.idleBytesNow).toBe(4096);
    pool.dispose();
  });
});
