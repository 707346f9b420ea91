import { afterAll, describe, expect, test } from 'vitest';
import { pipelineScheduleNames, type PipelineScheduleName } from '../../../src/mesh/pipeline-schedules.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';
import type { OracleReport } from '../../../src/parallel/oracle.ts';
import type { PipelineModel } from '../../../src/parallel/pipeline-model.ts';
import type { RankPool } from '../../../src/ranks/pool.ts';
import { runPipeline } from '../../../src/session/pipeline-run.ts';
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
// pipelineTolerance, and after two Adam steps every weight within weightTolerance: every schedule on
// t 1 × p 2 (2 workers: stages without TP collectives, first and last only) and t 2 × p 4 (8 workers:
// TP collectives inside each stage, middle stages that both receive and send). The other corners,
// t 2 × p 2 and t 1 × p 4, run no code path these two miss; the in-process twin checks every schedule ×
// p ∈ {2, 4} × t ∈ {1, 2} point by point (tests/unit/parallel/pipeline-step.test.ts), and
// pipeline-dp.test.ts runs every schedule again at t 1 × p 2 × d 2 and t 2 × p 4 × d 2. The second step
// is measured (the first compiles the pipelines): its bubble is printed beside the projection's, never asserted.
const meshes: { tp: number; pp: number }[] = [
  { tp: 1, pp: 2 },
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
        const run = await runPipeline(pool, { model: mdl, training: twoSteps });
        const report = run.oracle;
        expect(report.pass, failures(report)).toBe(true);
        // Every rank ran every pass of its stage's order.
        for (const o of run.outputs)
          expect(o.spans.length).toBe(2 * mdl.m * mdl.v + (schedule === 'zb-h1' ? mdl.m : 0));
        // The trace holds each boundary message at both ends: per TP rank 2·m·(p·v − 1) of them, and
        // every send has the receive of the same tensor at the rank it names.
        const p2p = run.trace.flatMap((e) => (e.p2p ? [e.p2p] : []));
        const sends = p2p.filter((x) => x.kind === 'send');
        expect(sends.length).toBe(tp * 2 * mdl.m * (pp * mdl.v - 1));
        expect(p2p.length).toBe(2 * sends.length);
        for (const s of sends)
          expect(
            p2p.some((r) => r.kind === 'recv' && r.from === s.from && r.to === s.to && r.tensor === s.tensor),
          ).toBe(true);
        expect(run.trace.filter((e) => e.pipelinePass).length).toBe(
          run.outputs.reduce((n, o) => n + o.spans.length, 0),
        );
        for (const s of run.memory) expect(s.peakBytes).toBeGreaterThan(0);
        const b = run.measured;
        const sim = run.projected.simulated;
        const shares = (xs: readonly number[]) => xs.map((x) => x.toFixed(3)).join(' ');
        console.log(
          `t ${tp} × p ${pp} ${schedule}: step ${b.spanMs.toFixed(1)} ms, measured idle share per stage ${shares(b.idleShare)}` +
            (sim ? `, projection's simulation with these pass times ${shares(sim.idleShare)}` : '') +
            `, ${run.projected.formula} = ${run.projected.formulaShare.toFixed(3)}` +
            `; peak per stage ${run.memory.map((s) => `${(s.peakBytes / 1024).toFixed(0)} KiB`).join(' ')}` +
            `; worst ${report.worst.tensor} ${report.worst.maxAbs.toExponential(2)} (tol ${report.worst.tol.toExponential(2)})`,
        );
      },
    );
  });
