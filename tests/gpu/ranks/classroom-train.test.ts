import { afterAll, expect, test } from 'vitest';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { oracleTolerance } from '../../../src/parallel/oracle.ts';
import { trainClassroom, type TrainPoint } from '../../../src/session/classroom-train-run.ts';
import type { LayerWorkerPrograms } from '../../../src/session/layer-run.ts';
import { createLayerPool } from '../../../src/session/pools.ts';
import type { RankPool } from '../../../src/ranks/pool.ts';

let pool: RankPool<LayerWorkerPrograms> | undefined;
afterAll(() => pool?.dispose());

const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

test('20 Adam steps at t = 2 on the built-in text: the loss falls, and TP = 2 and TP = 1 agree step by step', async () => {
  pool = await createLayerPool(2);
  const points: TrainPoint[] = await trainClassroom(pool, {
    config: configFromPreset('classroom', { tp: 2, b: 4 }),
    steps: 20,
    lr: 0.01,
  });
  expect(points).toHaveLength(20);
  expect(mean(points.slice(-5).map((p) => p.loss))).toBeLessThan(mean(points.slice(0, 5).map((p) => p.loss)));
  const diff = Math.max(...points.map((p) => Math.abs(p.loss - p.lossRef)));
  // The oracle's tolerance 16·ε·(K+1)·max|loss| (K = 32): the two runs sum the same float32 products
  // in other orders, and Adam's update (≈ lr·sign of the moment) does not amplify rounding.
  const tol = oracleTolerance(
    configFromPreset('classroom', { tp: 2, b: 4 }),
    Math.max(...points.map((p) => p.lossRef)),
  );
  console.log(`max |loss_t − loss_1| = ${diff} (tolerance ${tol})`);
  expect(diff).toBeLessThanOrEqual(tol);
  expect(points.every((p) => p.spread === 0)).toBe(true);
});

test('with SP and the skipped norm-gradient all-reduce the ranks’ norm gains drift apart, more as training goes on', async () => {
  pool ??= await createLayerPool(2);
  const points = await trainClassroom(pool, {
    config: configFromPreset('classroom', { tp: 2, b: 4, sp: true, skipSpNormGradAllReduce: true }),
    steps: 20,
    lr: 0.01,
  });
  console.log(`spread of the norm gains: step 1 ${points[0].spread}, step 20 ${points.at(-1)!.spread}`);
  expect(points[0].spread).toBeGreaterThan(0);
  expect(points.at(-1)!.spread).toBeGreaterThan(points[0].spread);
});

test('at t = 4 (two KV groups < t: QKV all-gathered) 10 steps follow the TP = 1 curve to float32 rounding', async () => {
  await pool?.dispose();
  pool = await createLayerPool(4);
  const c = configFromPreset('classroom', { tp: 4, b: 4 });
  const points = await trainClassroom(pool, { config: c, steps: 10, lr: 0.01 });
  const diff = Math.max(...points.map((p) => Math.abs(p.loss - p.lossRef)));
  const tol = oracleTolerance(c, Math.max(...points.map((p) => p.lossRef)));
  console.log(`t = 4: loss ${points[0].loss} → ${points[9].loss}, max |loss_t − loss_1| = ${diff} (tolerance ${tol})`);
  expect(diff).toBeLessThanOrEqual(tol);
  expect(points.every((p) => p.spread === 0)).toBe(true);
});
