import { splitLayers, type PipelineSplit } from '../mesh/pipeline-split.ts';
import { stagePasses, type PipelineScheduleName } from '../mesh/pipeline-schedules.ts';
import type { LayerConfig } from './config.ts';
import type { StepInputs } from './layer.ts';
import { stepInputs } from './step-data.ts';
import { assertValid } from './validate.ts';
import type { WeightName } from './weight-names.ts';

/**
 * A model of L transformer blocks cut into p pipeline stages × v model chunks, trained on m
 * micro-batches per step. Every block has `layer`'s sizes, TP degree and SP; block ℓ's weights are
 * seeded by layerSeed(ℓ), micro-batch j's tokens by microBatchSeed(j); the embedding and the output
 * layer are `layer`'s own (its seed). The embedding sits on the first virtual stage, the output layer
 * and the loss on the last (mesh/pipeline-split.ts, Megatron's get_num_layers_to_build).
 */
export interface PipelineModel {
  /** One block's sizes, t, SP and seed; vocab > 0 (the first stage embeds, the last computes the loss). */
  readonly layer: LayerConfig;
  /** L: transformer blocks. */
  readonly layers: number;
  readonly p: number;
  readonly v: number;
  readonly m: number;
  readonly schedule: PipelineScheduleName;
  /** --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers. */
  readonly first?: number;
  readonly last?: number;
}

/** The block weights (emb and wout are the model's, not a block's). */
export const blockWeightNames: readonly WeightName[] = ['wqkv', 'wo', 'g1', 'g2', 'wfc1', 'wdown'];

/** The embedding and output weights: the model's first and last virtual stage's. */
export const headWeightNames: readonly WeightName[] = ['emb', 'wout'];

/** Block ℓ's seed: the model's seed moved by 1000·(ℓ + 1) (blocks differ from each other and from the head). */
export const layerSeed = (model: PipelineModel, l: number): number => model.layer.seed + 1000 * (l + 1);

/** Micro-batch j's seed (its ids and targets). */
export const microBatchSeed = (model: PipelineModel, j: number): number => model.layer.seed + 100_003 * (j + 1);

/** Block ℓ's configuration: the model's layer with block ℓ's seed. */
export const blockConfig = (model: PipelineModel, l: number): LayerConfig => ({
  ...model.layer,
  seed: layerSeed(model, l),
});

/** Micro-batch j's ids and targets [s, b]. */
export const microBatchInputs = (model: PipelineModel, j: number): StepInputs =>
  stepInputs({ ...model.layer, seed: microBatchSeed(model, j) });

/** The model's split: transformer blocks per stage and chunk. */
export function modelSplit(model: PipelineModel): PipelineSplit {
  return splitLayers(model.layers, model.p, model.v, {
    ...(model.first !== undefined && { first: model.first }),
    ...(model.last !== undefined && { last: model.last }),
  });
}

/**
 * chunkBlocks(model)[i][c]: the global indices of the blocks of chunk c on stage i. Virtual stage
 * k = c·p + i holds the blocks after those of virtual stages 0…k−1.
 */
export function chunkBlocks(model: PipelineModel): number[][][] {
  const { layers } = modelSplit(model);
  const { p, v } = model;
  const out = Array.from({ length: p }, () => Array.from({ length: v }, (): number[] => []));
  let next = 0;
  for (let k = 0; k < p * v; k++) {
    const i = k % p;
    const c = Math.floor(k / p);
    for (let n = 0; n < layers[i]![c]!; n++) out[i]![c]!.push(next++);
  }
  return out;
}

/** Refuses a model the ranks cannot run, naming the rule and what to write instead. */
export function assertPipelineModel(model: PipelineModel): void {
  if (!(model.layer.vocab > 0))
    throw new Error(
      'a pipeline model needs a vocabulary (vocab > 0): the first stage embeds tokens, the last computes the loss.',
    );
  if (!(Number.isInteger(model.layers) && model.layers >= 1))
    throw new Error(`the model needs a whole number L ≥ 1 of layers (got ${model.layers}).`);
  assertValid(model.layer);
  modelSplit(model);
  stagePasses(model.schedule, model, 0);
}
