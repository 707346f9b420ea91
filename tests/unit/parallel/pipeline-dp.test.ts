import { describe, expect, it } from 'vitest';
import { configFromPreset } from '../../../src/parallel/config.ts';
import type { DpSyncMode } from '../../../src/parallel/dp-options.ts';
import type { OracleReport } from '../../../src/parallel/oracle.ts';
import {
  comparePipelineReplicas,
  gatherReplicas,
  pipelineReplicasOracle,
  stageGradBuffer,
} from '../../../src/parallel/pipeline-dp.ts';
import { runPipelineInProcess } from '../../../src/parallel/pipeline-in-process.ts';
import type { PipelineModel } from '../../../src/parallel/pipeline-model.ts';
import { pipelineReference, stageWeightArrays } from '../../../src/parallel/pipeline-oracle.ts';
import type { PipelineScheduleName } from '../../../src/mesh/pipeline-schedules.ts';

const failures = (r: OracleReport) =>
  r.entries
    .filter((e) => !e.pass)
    .map((e) => `${e.tensor}: ${e.maxAbs.toExponential(2)} > ${e.tol.toExponential(2)}`)
    .join('; ');

const model = (p: number, schedule: PipelineScheduleName, tp = 1): PipelineModel => ({
  layer: configFromPreset('classroom', { tp }),
  layers: 8,
  p,
  v: schedule === 'interleaved' ? 2 : 1,
  m: 4,
  schedule,
});

// Megatron's β1, β2; lr 1e-2 and ε 1e-2 as the pipeline's oracle (weightTolerance).
const twoSteps = { steps: 2, adam: { lr: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-2 } };

/** Replica q's ranks of an in-process run (runPipelineInProcess returns them replica by replica). */
const byReplica = <X>(outs: readonly X[], d: number): X[][] => {
  const n = outs.length / d;
  return Array.from({ length: d }, (_, q) => outs.slice(q * n, (q + 1) * n));
};

// Pipeline × data parallel in Node (the CPU twins, in-process TP, PP and DP groups): d replicas of
// the pipeline, each on its m micro-batches of the global batch, gradients averaged over the DP
// group (all-reduce, or the distributed optimizer's reduce-scatter → Adam on the shard → all-gather)
// against one device accumulating all m·d micro-batches, after each of two Adam steps.
describe('a pipeline with d replicas matches one device on the global batch', () => {
  for (const mode of ['all-reduce', 'distributed-optimizer'] as DpSyncMode[])
    for (const [p, schedule, tp] of [
      [2, '1f1b', 1],
      [2, 'zb-h1', 2],
      [2, 'interleaved', 1],
    ] as const)
      it(`${mode}, ${schedule}, t ${tp} × p ${p} × d 2`, async () => {
        const mdl = model(p, schedule, tp);
        const outs = await runPipelineInProcess(mdl, twoSteps, { d: 2, mode });
        const r = await pipelineReplicasOracle(mdl, twoSteps, mode, byReplica(outs, 2));
        expect(r.pass, failures(r)).toBe(true);
        // Both replicas' losses, gradients and weights were compared.
        expect(r.entries.filter((e) => e.tensor.startsWith('replica 1: loss')).length).toBe(mdl.m);
        expect(r.entries.some((e) => e.tensor === 'replica 1: block 7 wdown')).toBe(true);
      }, 120_000);

  it('fails when the replicas sum their gradients instead of averaging them', async () => {
    const mdl = model(2, '1f1b');
    const outs = await runPipelineInProcess(mdl, twoSteps, { d: 2, mode: 'all-reduce' });
    const summed = await pipelineReference(mdl, twoSteps, 2 * mdl.m, 1);
    const r = comparePipelineReplicas(mdl, summed, gatherReplicas(mdl, 'all-reduce', byReplica(outs, 2)), twoSteps);
    expect(r.pass).toBe(false);
    expect(r.worst.maxAbs / r.worst.tol).toBeGreaterThan(100);
  }, 120_000);

  it("the distributed optimizer's ranks each hold 1/d of the stage's padded buffer", async () => {
    const mdl = model(2, '1f1b');
    const outs = await runPipelineInProcess(mdl, { steps: 1 }, { d: 2, mode: 'distributed-optimizer' });
    const numel = stageGradBuffer(stageWeightArrays(mdl, 0, 0), 2, 'distributed-optimizer').layout.numel;
    const stage0 = outs.filter((o) => o.stage === 0);
    expect(stage0.map((o) => o.gradShard?.start)).toEqual([0, numel / 2]);
    for (const o of stage0) expect(o.gradShard?.data.length).toBe(numel / 2);
  }, 60_000);
});
