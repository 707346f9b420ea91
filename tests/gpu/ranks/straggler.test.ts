// #slow=r:f on the real rank workers: rank r does f× the kernel dispatches, the others none more,
// and the step's result is untouched (the extra dispatches write only stand-ins); #slowlink
// leaves the result untouched too.
import { afterAll, expect, test } from 'vitest';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { runLayer, type LayerWorkerPrograms } from '../../../src/session/layer-run.ts';
import { createLayerPool } from '../../../src/session/pools.ts';
import type { RankPool } from '../../../src/ranks/pool.ts';

let pool: RankPool<LayerWorkerPrograms> | undefined;
afterAll(async () => {
  await pool?.dispose();
});

test('#slow=2:f at t = 4: rank 2 dispatches (f − 1) × its ops’ kernels more, the others the same, the output bit-identical', {
  timeout: 300_000,
}, async () => {
  const c = configFromPreset('classroom', { tp: 4 });
  pool = await createLayerPool(4);
  const run = (factor: number) =>
    runLayer(pool!, c, { timing: false, cpuCheck: false, slow: factor === 1 ? null : { rank: 2, factor } });
  const [d1, d2, d3] = [await run(1), await run(2), await run(3)];
  for (const r of [d1, d2, d3]) expect(r.oracle.pass).toBe(true);
  // Every kernel of an op is repeated: the count grows linearly in f on rank 2 alone.
  const extra = d2.dispatches[2]! - d1.dispatches[2]!;
  expect(extra).toBeGreaterThan(0);
  expect(extra).toBeLessThanOrEqual(d1.dispatches[2]!);
  expect(d3.dispatches[2]! - d1.dispatches[2]!).toBe(2 * extra);
  for (const r of [0, 1, 3]) {
    expect(d2.dispatches[r]).toBe(d1.dispatches[r]);
    expect(d3.dispatches[r]).toBe(d1.dispatches[r]);
  }
  expect(d3.slow).toEqual({ rank: 2, factor: 3 });
  // The real dispatches and their order are unchanged: the gradients and the loss are the same bits.
  expect(d3.output).toEqual(d1.output);
  // #slowlink=2:3 on the pool's own transport: rank 2 puts each chunk on the ring 3 times, the
  // neighbours take one; the result is the same bits.
  const linked = await runLayer(pool, c, { timing: false, cpuCheck: false, slowlink: { rank: 2, factor: 3 } });
  expect(linked.output).toEqual(d1.output);
  expect(linked.dispatches).toEqual(d1.dispatches);
  await expect(runLayer(pool, c, { timing: false, slow: { rank: 4, factor: 2 } })).rejects.toThrow(
    /slow=4:2 names rank 4, but t = 4 has ranks 0–3/,
  );
});
