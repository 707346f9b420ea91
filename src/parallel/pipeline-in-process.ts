import type { HostTensor } from '../comm/host-tensor.ts';
import { createInProcessGroup } from '../comm/in-process.ts';
import { CpuBackend } from './backend-cpu.ts';
import { LayerComm } from './layer-comm.ts';
import { rankOwnership } from './ownership.ts';
import { assertPipelineModel, type PipelineModel } from './pipeline-model.ts';
import type { DpSyncMode } from './dp-options.ts';
import { endStageStep, type StageDpOutput } from './pipeline-dp.ts';
import { stageWeightArrays, type PipelineTraining, type StageOptimizer } from './pipeline-oracle.ts';
import { pipelineStageStep } from './pipeline-step.ts';
import { uploadWeights } from './step-data.ts';

/**
 * One step of a pipeline model on t·p·d ranks in this thread (the CPU twins, in-process TP groups of
 * t, PP groups of p and, with `dp`, DP groups of d replicas, point-to-point between stages): what
 * the GPU ranks run, in Node. Returns every rank's outputs, replica by replica (replica q's t·p
 * ranks, stage-major, at [q·t·p, (q + 1)·t·p)); gatherPipeline turns one replica's into the logical layout.
 */
export async function runPipelineInProcess(
  model: PipelineModel,
  training: PipelineTraining = { steps: 1 },
  dp?: { readonly d: number; readonly mode: DpSyncMode },
): Promise<StageDpOutput[]> {
  assertPipelineModel(model);
  const t = model.layer.tp;
  const d = dp?.d ?? 1;
  const owners = rankOwnership(model.layer);
  const tpGroups = Array.from({ length: d * model.p }, () => createInProcessGroup(t));
  const ppGroups = Array.from({ length: d * t }, () => createInProcessGroup(model.p));
  const dpGroups = Array.from({ length: model.p * t }, () => createInProcessGroup(d));
  let clock = 0;
  const jobs = [];
  for (let q = 0; q < d; q++)
    for (let stage = 0; stage < model.p; stage++)
      for (let r = 0; r < t; r++)
        jobs.push(
          (async () => {
            const arrays = stageWeightArrays(model, stage, r);
            const optimizer: StageOptimizer = new Map();
            let out: StageDpOutput | undefined;
            for (let step = 0; step < training.steps; step++) {
              const be = new CpuBackend();
              const upload = (a: Parameters<typeof uploadWeights>[0]) =>
                uploadWeights(a, (n, shape, data) => be.tensor(n, shape, data));
              const weights = {
                blocks: new Map(arrays.blocks.map(([l, a]) => [l, upload(a)])),
                head: upload(arrays.head),
              };
              const lc = new LayerComm(tpGroups[q * model.p + stage]![r]!, (x: HostTensor) => x.shape);
              const link = { p2p: ppGroups[q * t + r]![stage]! };
              const res = await pipelineStageStep(be, lc, link, model, stage, owners[r]!, weights, () => clock++, {
                firstMicroBatch: q * model.m,
              });
              out = await endStageStep(be, res, {
                tpRank: r,
                stage,
                arrays,
                optimizer,
                ...(training.adam && { adam: training.adam }),
                ...(dp && { dp: { comm: dpGroups[stage * t + r]![q]!, rank: q, size: d, mode: dp.mode } }),
              });
            }
            return training.adam ? { ...out!, weights: arrays } : out!;
          })(),
        );
  return Promise.all(jobs);
}
