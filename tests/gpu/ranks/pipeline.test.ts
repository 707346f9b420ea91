import { afterAll, describe, expect, test } from 'vitest';
import { pipelineScheduleNames, type PipelineScheduleName } from '../../../src/mesh/pipeline-schedules.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';
import type { OracleReport } from '../../../src/parallel/oracle.ts';
import { measuredBubble, projectedBubble1F1B } from '../../../src/parallel/pipeline-bubble.ts';
import type { PipelineModel } from '../../../src/parallel/pipeline-model.ts';
import { comparePipeline, gatherPipeline, pipelineReference } from '../../../src/parallel/pipeline-oracle.ts';
import type { RankPool } from '../../../src/ranks/pool.ts';
import { simulatePipeline } from '../../../src/projection/pipeline/pipeline-schedule.ts';
import { createLayerPool } from '../../../src/session/pools.ts';
import type { LayerWorkerPrograms } from '../../../src/session/layer-run.ts';

const failures = (r: OracleReport) =>
  r.entries
    .filter((e) => !e.pass)
    .map((e) => `${e.tensor}: ${e.maxAbs.toExponential(2)} > ${e.tol.toExponential(2)}`)
    .join('; ');

// Pipeline parallel on the rank workers (one GPUDevice each, SwiftShader here): a model of L = 8
// classroom-sized blocks over p stages, m = 4 micro-batches, each stage's blocks run by the TP layer
// on its TP group, activations and gradients moved between stages on GPU tensors over the PP group.
// The loss of every micro-batch and every parameter's accumulated gradient must equal the one-device
// run (pipelineReference: the same blocks, micro-batch after micro-batch, on the CPU twins) within
// pipelineTolerance, and after two Adam steps every weight within weightTolerance: every schedule ×
// p ∈ {2, 4} × t ∈ {1, 2} (2 to 8 workers; about a minute on SwiftShader here). The second step is
// measured (the first compiles the pipelines): its bubble is printed beside the projection's, never asserted.
const meshes: { tp: number; pp: number }[] = [
  { tp: 1, pp: 2 },
  { tp: 2, pp: 2 },
  { tp: 1, pp: 4 },
  { tp: 2, pp: 4 },
];

// Megatron's β1 and β2; lr 1e-2 and ε 1e-2 keep the update Lipschitz in the gradient (weightTolerance).
const twoSteps = { steps: 2, adam: { lr: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-2 } };

const model = (tp: number, p: number, schedule: PipelineScheduleName): PipelineModel => ({
  layer: configFromPreset('classroom', { tp }),
  layers: 8,
  p,
  v: schedule === 'interleaved' ? 2 : 1,
  m: 4,
  schedule,
});

for (const { tp, pp } of meshes)
  describe(`a pipeline on a mesh of t ${tp} × p ${pp} rank workers`, () => {
    let pool: RankPool<LayerWorkerPrograms> | undefined;
    afterAll(async () => {
      await pool?.dispose();
    });

    test.each(pipelineScheduleNames)(
      '%s: loss, gradients and weights after two Adam steps equal one device',
      { timeout: 600_000 },
      async (schedule) => {
        pool ??= await createLayerPool(tp * pp, 'auto', 60_000, { degrees: { tp, pp } });
        const mdl = model(tp, pp, schedule);
        const outs = await pool.run('pipelineStep', { model: mdl, ...twoSteps });
        const report = comparePipeline(
          mdl,
          await pipelineReference(mdl, twoSteps),
          gatherPipeline(mdl, outs),
          twoSteps,
        );
        expect(report.pass, failures(report)).toBe(true);
        // Every rank ran every pass of its stage's order.
        for (const o of outs) expect(o.spans.length).toBe(2 * mdl.m * mdl.v + (schedule === 'zb-h1' ? mdl.m : 0));
        const b = measuredBubble(pp, outs);
        // The projection's simulation of the same layout with the passes' measured mean times (1F1B and
        // interleaved: the schedules it draws), no p2p time: what the order alone leaves idle.
        const mean = (stage: number, pass: 'F' | 'B') => {
          const xs = outs.filter((o) => o.stage === stage).flatMap((o) => o.spans.filter((s) => s.pass === pass));
          return xs.reduce((a, s) => a + s.t1 - s.t0, 0) / xs.length;
        };
        const simulated =
          schedule === '1f1b' || schedule === 'interleaved'
            ? simulatePipeline({
                p: pp,
                v: mdl.v,
                m: mdl.m,
                forwardMs: (i) => mean(i, 'F'),
                backwardMs: (i) => mean(i, 'B'),
                p2pMs: 0,
              }).idleShare
            : undefined;
        const shares = (xs: readonly number[]) => xs.map((x) => x.toFixed(3)).join(' ');
        console.log(
          `t ${tp} × p ${pp} ${schedule}: step ${b.spanMs.toFixed(1)} ms, measured idle share per stage ${shares(b.idleShare)}` +
            (simulated ? `, projection's simulation with these pass times ${shares(simulated)}` : '') +
            (schedule === '1f1b' ? `, (p − 1)/(m + p − 1) = ${projectedBubble1F1B(pp, mdl.m).toFixed(3)}` : '') +
            `; worst ${report.worst.tensor} ${report.worst.maxAbs.toExponential(2)} (tol ${report.worst.tol.toExponential(2)})`,
        );
      },
    );
  });
