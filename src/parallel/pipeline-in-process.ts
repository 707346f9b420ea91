import type { HostTensor } from '../comm/host-tensor.ts';
import { createInProcessGroup } from '../comm/in-process.ts';
import { CpuBackend } from './backend-cpu.ts';
import { LayerComm } from './layer-comm.ts';
import { rankOwnership } from './ownership.ts';
import { assertPipelineModel, type PipelineModel } from './pipeline-model.ts';
import {
  readStageOutput,
  stageWeightArrays,
  stepStage,
  type PipelineTraining,
  type StageOptimizer,
  type StageOutput,
} from './pipeline-oracle.ts';
import { pipelineStageStep } from './pipeline-step.ts';
import { uploadWeights } from './step-data.ts';

/**
 * One step of a pipeline model on t·p ranks in this thread (the CPU twins, in-process TP groups of t
 * and PP groups of p, point-to-point between stages): what the GPU ranks run, in Node. Returns every
 * rank's outputs (gatherPipeline turns them into the logical layout).
 */
export async function runPipelineInProcess(
  model: PipelineModel,
  training: PipelineTraining = { steps: 1 },
): Promise<StageOutput[]> {
  assertPipelineModel(model);
  const t = model.layer.tp;
  const owners = rankOwnership(model.layer);
  const tpGroups = Array.from({ length: model.p }, () => createInProcessGroup(t));
  const ppGroups = Array.from({ length: t }, () => createInProcessGroup(model.p));
  let clock = 0;
  const jobs = [];
  for (let stage = 0; stage < model.p; stage++)
    for (let r = 0; r < t; r++)
      jobs.push(
        (async () => {
          const arrays = stageWeightArrays(model, stage, r);
          const optimizer: StageOptimizer = new Map();
          let out: StageOutput | undefined;
          for (let step = 0; step < training.steps; step++) {
            const be = new CpuBackend();
            const upload = (a: Parameters<typeof uploadWeights>[0]) =>
              uploadWeights(a, (n, shape, data) => be.tensor(n, shape, data));
            const weights = {
              blocks: new Map(arrays.blocks.map(([l, a]) => [l, upload(a)])),
              head: upload(arrays.head),
            };
            const lc = new LayerComm(tpGroups[stage]![r]!, (x: HostTensor) => x.shape);
            const link = { p2p: ppGroups[r]![stage]! };
            const res = await pipelineStageStep(be, lc, link, model, stage, owners[r]!, weights, () => clock++);
            out = await readStageOutput((x: HostTensor) => be.read(x), r, stage, res);
            if (training.adam) stepStage(arrays, out, optimizer, training.adam);
          }
          return training.adam ? { ...out!, weights: arrays } : out!;
        })(),
      );
  return Promise.all(jobs);
}
