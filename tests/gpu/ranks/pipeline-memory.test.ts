import { afterAll, describe, expect, test } from 'vitest';
import type { PipelineScheduleName } from '../../../src/mesh/pipeline-schedules.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';
import type { PipelineModel } from '../../../src/parallel/pipeline-model.ts';
import type { RankPool } from '../../../src/ranks/pool.ts';
import type { LayerWorkerPrograms } from '../../../src/session/layer-run.ts';
import { runPipeline } from '../../../src/session/pipeline-run.ts';
import { createLayerPool } from '../../../src/session/pools.ts';

// Live memory by class on the rank workers (one GPUDevice each, SwiftShader here): L = 8 classroom
// blocks over p = 2 stages, m = 4. After each pass, each rank's own record of its GPU tensors
// (stage-memory.ts) by class — weights, gradient sums, saved activations and, under ZB-H1, what each
// backward waiting for its W holds (W's inputs and gradient buffers, accounting/wgrad-inputs.ts) —
// equals the accounting exactly (accounting/pipeline-stage-memory.ts × the schedule's counts), and the
// GPU backend's live bytes are never below what the classes count (workspace ≥ 0: the buffers it holds
// beyond the tracked ones).
const model = (schedule: PipelineScheduleName): PipelineModel => ({
  layer: configFromPreset('classroom', { tp: 1 }),
  layers: 8,
  p: 2,
  v: 1,
  m: 4,
  schedule,
});

describe('live memory per stage on the rank workers, t 1 × p 2', () => {
  let pool: RankPool<LayerWorkerPrograms> | undefined;
  afterAll(async () => {
    await pool?.dispose();
  });

  test.each(['1f1b', 'zb-h1'] as const)(
    '%s: weights, gradients, saved activations and what waits for W after each pass equal the accounting',
    { timeout: 300_000 },
    async (schedule) => {
      pool ??= await createLayerPool(2, 'auto', 60_000, { degrees: { tp: 1, pp: 2 } });
      const run = await runPipeline(pool, { model: model(schedule), training: { steps: 1 } });
      expect(run.oracle.pass).toBe(true);
      for (const c of run.memoryClasses) {
        const where = `stage ${c.stage}`;
        expect(c.passes.length, where).toBe(schedule === 'zb-h1' ? 12 : 8);
        expect(c.mismatches, where).toEqual([]);
        for (const x of c.passes) expect(x.measured.workspace, where).toBeGreaterThanOrEqual(0);
        // Stage 0 holds p = 2 micro-batches' activations at its peak under both schedules.
        if (c.stage === 0)
          expect(Math.max(...c.passes.map((x) => x.measured.activations))).toBe(2 * c.passes[0]!.accounted.activations);
        const deferred = Math.max(...c.passes.map((x) => x.measured.deferredW));
        if (schedule === 'zb-h1') expect(deferred, where).toBeGreaterThan(0);
        else expect(deferred, where).toBe(0);
      }
      if (schedule === 'zb-h1') {
        const peaks = run.memoryClasses.map((c) => Math.max(...c.passes.map((x) => x.measured.deferredW)));
        const total = run.memory.map((x) => x.peakBytes);
        console.log(
          `zb-h1: deferred-W peak per stage ${peaks.join(', ')} B; live peak per stage ${total.join(', ')} B`,
        );
      }
    },
  );
});
