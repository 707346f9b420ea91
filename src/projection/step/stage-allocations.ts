import { defaultKernelOptions } from '../layer/kernel-options.ts';
import { overlapBuffers, type OverlapBuffer } from '../layer/overlap-buffers.ts';
import { overlapsOf } from '../layer/overlap-flags.ts';
import type { Machine } from '../layer/projected-layer.ts';
import type { TrainingSetup } from '../../megatron/training-setup.ts';
import { stateBytes } from '../links/data-parallel.ts';
import type { StageAllocations } from '../pipeline/memory-timeline.ts';
import { holdsEmbedding, holdsOutput } from '../pipeline/pipeline-split.ts';
import type { ChunkTimes } from './chunk-times.ts';

/**
 * What stage i allocates, by lifetime (memory-timeline.ts): its weights, main weights and Adam
 * moments (a 1/(DP·cp) shard with the distributed optimizer) and what the overlaps hold,
 * resident; the gradient buffer per step; per micro-batch each chunk's kept activations (plus
 * the embedding's and the output's on the end stages); the recompute unit during a backward;
 * the logits and the fp32 softmax of cross entropy on the last stage.
 */
export function stageAllocations(
  setup: TrainingSetup,
  machine: Machine,
  ct: ChunkTimes,
): { buffers: OverlapBuffer[]; of: (i: number) => StageAllocations } {
  const { system, dtype } = machine;
  const { deg, split, own, model, rec } = ct;
  const dpGroup = deg.dp * deg.cp;
  const distOpt = setup.distributedOptimizer ?? false;
  const per = stateBytes(dtype, distOpt, dpGroup);
  const kernels = machine.kernels ?? defaultKernelOptions;
  const buffers = overlapBuffers(
    overlapsOf(setup, kernels),
    setup,
    kernels,
    dtype,
    system.gpu,
    own.tokens[1] - own.tokens[0],
  );
  const of = (i: number): StageAllocations => ({
    resident: [
      { label: 'weights', bytes: model.stageParams[i]! * per.weights },
      {
        label: distOpt ? `main weights and Adam moments (1/${dpGroup} shard)` : 'main weights and Adam moments',
        bytes: model.stageParams[i]! * per.optimizer,
      },
      ...buffers.filter((b) => b.bytes > 0).map((b) => ({ label: b.label, bytes: b.bytes })),
    ],
    perStep: [{ label: 'gradient buffer', bytes: model.stageParams[i]! * per.grads }],
    keptBytes: (ch) =>
      rec[i]![ch]!.keptBytes +
      (holdsEmbedding(i, ch) ? model.embeddingActivation : 0) +
      (holdsOutput(split, i, ch) ? model.outputActivation : 0),
    backwardTransientBytes: (ch) => rec[i]![ch]!.backwardTransientBytes,
    forwardTransientBytes: (ch) => (holdsOutput(split, i, ch) ? model.logitsForward : 0),
    lossBytes: (ch) => (holdsOutput(split, i, ch) ? model.lossSoftmax : 0),
  });
  return { buffers, of };
}
