import type { TrainDtype } from '../../hardware/dtype.ts';
import { fsdpSharding, type FsdpJob, type FsdpSharding } from '../../megatron/fsdp.ts';
import { defaultKernelOptions } from '../layer/kernel-options.ts';
import type { Machine } from '../layer/projected-layer.ts';
import type { TrainingSetup } from '../../megatron/training-setup.ts';
import type { PipelineSplit } from '../../mesh/pipeline-split.ts';
import { stateBytes } from '../links/data-parallel.ts';
import { fsdpStateBytes } from '../links/fsdp.ts';
import type { StageModel } from '../pipeline/stage-model.ts';
import { gpuOptimizerShare } from './optimizer-offload.ts';

/** What a setup shards over its DP·cp group: FSDP's sharding, or DDP's (the distributed optimizer shards the optimizer). */
export function dpSharding(setup: Pick<TrainingSetup, 'fsdp' | 'distributedOptimizer'>): FsdpSharding {
  if (setup.fsdp) return fsdpSharding(setup.fsdp);
  const distOpt = setup.distributedOptimizer ?? false;
  return { optimizer: distOpt, grads: false, params: false, gatherInBackward: false, gatherAfterStep: distOpt };
}

/**
 * Bytes per parameter a GPU keeps of a setup's dense (non-expert) parameters: fsdpStateBytes with
 * FSDP, else Megatron's DDP buffers (stateBytes: fp32 main gradients for bf16, the optimizer state
 * sharded by the distributed optimizer); the optimizer's share on the host with --optimizer-cpu-offload left out.
 */
export function setupStateBytes(
  setup: Pick<TrainingSetup, 'fsdp' | 'distributedOptimizer' | 'optimizerCpuOffload'>,
  dtype: TrainDtype,
  d: number,
): { weights: number; grads: number; optimizer: number } {
  const per = setup.fsdp
    ? fsdpStateBytes(dtype, fsdpSharding(setup.fsdp), d)
    : stateBytes(dtype, setup.distributedOptimizer ?? false, d);
  // --optimizer-cpu-offload keeps the offloaded share of the main weights and moments in host memory.
  return { ...per, optimizer: per.optimizer * gpuOptimizerShare(setup) };
}

/**
 * The parameters of each stage's chunks whose gradients the DP tail synchronises once per step:
 * all of them under DDP, ZeRO-0 and ZeRO-1; with gradients sharded (ZeRO-2/3, FSDP2) the layers'
 * are reduce-scattered unit by unit in every micro-batch's backward (fsdpLayerTimes), leaving the
 * embedding and the output layer, which are no FSDP unit (mcore_fsdp_adapter.py:161-163).
 */
export function dpTailChunkParams(
  setup: Pick<TrainingSetup, 'fsdp' | 'distributedOptimizer'>,
  model: Pick<StageModel, 'chunkParams' | 'layerParams'>,
  split: PipelineSplit,
): readonly (readonly number[])[] {
  if (!dpSharding(setup).grads) return model.chunkParams;
  return model.chunkParams.map((row, i) => row.map((p, ch) => p - split.layers[i]![ch]! * model.layerParams));
}

/** What FSDP's rules (fsdp.ts fsdpRefusals) read of a setup on `machine` (CUDA_DEVICE_MAX_CONNECTIONS: the job's to set). */
export function fsdpJobOf(setup: TrainingSetup, machine: Machine): FsdpJob {
  return {
    pp: setup.pp ?? 1,
    ep: setup.moe?.ep ?? 1,
    distributedOptimizer: setup.distributedOptimizer ?? false,
    tiedEmbeddings: setup.tiedEmbeddings ?? false,
    ...fsdpRunFacts(machine),
  };
}

/** What the FSDP rules read of the machine: fp16 training and gradient accumulation fusion (FSDP2 refuses both). */
export const fsdpRunFacts = (
  machine: Pick<Machine, 'dtype' | 'kernels'>,
): { fp16: boolean; gradAccumulationFusion: boolean } => ({
  fp16: machine.dtype === 'fp16',
  gradAccumulationFusion: (machine.kernels ?? defaultKernelOptions).gradAccumulationFusion ?? false,
});
