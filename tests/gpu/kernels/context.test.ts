import { describe, expect, test } from 'vitest';
import { add, addInPlace } from '../../../src/kernels/add.ts';
import { GpuTimer } from '../../../src/kernels/gpu-timer.ts';
import { readTensor } from '../../../src/kernels/tensor.ts';
import { addRef } from '../../../src/reference/add.ts';
import { randomArray } from '../../../src/reference/random.ts';
import { download, expectClose, gpuCase, upload } from '../gpu-case.ts';

describe('KernelContext.holdUntilFlush', () => {
  test('held dispatches reach the GPU only at flush, in order, each timed on its own', async () => {
    await gpuCase(async (ctx) => {
      const a = randomArray(4096, 1),
        b = randomArray(4096, 2);
      const ta = upload(ctx, 'a', [4096], a),
        tb = upload(ctx, 'b', [4096], b);
      const out = upload(ctx, 'out', [4096], new Float32Array(4096));
      await ctx.flush();
      const timer = GpuTimer.available(ctx.device) ? new GpuTimer(ctx, 8) : undefined;
      timer?.start();
      ctx.holdUntilFlush = true;
      add(ctx, ta, tb, out); // out = a + b
      addInPlace(ctx, out, tb); // out += b
      ctx.submit(); // held: nothing submitted yet
      // A read-back submits its own copy, which runs before the held kernels: out is still zero.
      expect(Array.from(await readTensor(ctx.device, out)).every((v) => v === 0)).toBe(true);
      ctx.holdUntilFlush = false;
      const times = await timer?.stop(); // flushes the held work: one command buffer per dispatch, one submission
      if (!timer) await ctx.flush();
      expectClose('a + b + b', await download(ctx, out), addRef(addRef(a, b), b), 0);
      if (times) {
        expect(times.times.map((t) => t.op)).toEqual(['add', 'add_inplace']);
        times.times.forEach((t) => expect(t.ns).toBeGreaterThan(0));
      } else {
        console.log('no timestamp-query on this adapter: the per-dispatch times were not checked');
      }
      timer?.destroy();
    });
  });
});
