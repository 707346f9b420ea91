// The linear layers' weights under a low-precision recipe, per step: their quantized parameters'
// all-gather (--fp8-param-gather, --fp4-param-gather), the weight casts Transformer Engine runs, and
// the amax all-reduce before the master cast (low-precision.ts, core_v0.19.0 with the TE it pins).
import { dtypeBytes } from '../../hardware/dtype.ts';
import { collectiveTimeUs } from '../../hardware/interconnect.ts';
import { memoryBoundUs } from '../../hardware/kernel-time.ts';
import { scaledKernelUs } from '../../hardware/calibrated-rates.ts';
import {
  amaxReduceBytesPerElement,
  fp4ParamGatherRefusals,
  fp8ParamGatherRefusals,
  quantizedGatherBytes,
  quantizedParamCastBytes,
  weightCastBytes,
  type LinearRecipe,
} from '../../megatron/low-precision.ts';
import type { TrainingSetup } from '../../megatron/training-setup.ts';
import { stateBytesPerParam } from '../../accounting/training-memory.ts';
import { defaultKernelOptions, fp8RecipeOf, linearRecipeOf, type KernelOptions } from '../layer/kernel-options.ts';
import type { Machine } from '../layer/projected-layer.ts';
import type { Interconnect } from '../../hardware/interconnect.ts';

/** What of a step's chunk times (chunk-times.ts ChunkTimes) the weights' pricing reads. */
export interface StageWeights {
  readonly split: { readonly layers: readonly (readonly number[])[] };
  readonly model: { readonly layerParams: number; readonly stageParams: readonly number[] };
  readonly moe?: {
    readonly layersPerChunk: readonly (readonly number[])[];
    readonly nonExpertParamDelta: number;
    readonly degrees: { readonly edp: number };
  };
  readonly expertParams: readonly (readonly number[])[];
  readonly deg: { readonly dp: number; readonly cp: number };
  readonly links: { readonly dpCp: Interconnect };
}

/** The recipe of the linear layers' weights and whether they are held quantized (the parameters themselves). */
export interface QuantizedWeights {
  readonly recipe: LinearRecipe;
  /** --fp8-param-gather under an fp8 recipe, or --fp4-param-gather under NVFP4. */
  readonly params: boolean;
}

/**
 * The linear layers' low-precision weights of `setup` under `kernels`, or undefined (the training
 * dtype; or FSDP, whose gathered units are not modelled in low precision).
 */
export function quantizedWeightsOf(
  setup: Pick<TrainingSetup, 'fsdp' | 'fp8ParamGather' | 'fp4ParamGather'>,
  kernels: KernelOptions,
): QuantizedWeights | undefined {
  const recipe = setup.fsdp ? undefined : linearRecipeOf(kernels);
  if (!recipe) return undefined;
  return { recipe, params: recipe === 'nvfp4' ? setup.fp4ParamGather === true : setup.fp8ParamGather === true };
}

/**
 * Megatron's refusals of the quantized parameter gathers (low-precision.ts fp8ParamGatherRefusals,
 * fp4ParamGatherRefusals), each flag given.
 */
export function quantizedParamRefusals(setup: TrainingSetup, kernels: KernelOptions): string[] {
  const fsdp = setup.fsdp !== undefined;
  const distributedOptimizer = setup.distributedOptimizer ?? false;
  return [
    ...(setup.fp8ParamGather
      ? fp8ParamGatherRefusals({
          fp8Recipe: fp8RecipeOf(kernels),
          shardedOptimizer: distributedOptimizer || fsdp,
          fsdp,
          optimizerCpuOffload: setup.optimizerCpuOffload !== undefined,
        })
      : []),
    ...(setup.fp4ParamGather
      ? fp4ParamGatherRefusals({ fp4: kernels.fp4 === 'e2m1', distributedOptimizer, fsdp })
      : []),
  ];
}

/**
 * Stage i's linear-layer parameters on one GPU (the layers' parameters, norm gains included, with
 * each MoE layer's router and shared experts in place of the dense MLP's): what the quantized
 * weights cover in the dense gradient buffer. The experts' are ChunkTimes.expertParams.
 */
export const stageLayerParams = (ct: StageWeights, i: number): number =>
  ct.split.layers[i]!.reduce(
    (a, n, ch) =>
      a + n * ct.model.layerParams + (ct.moe ? ct.moe.layersPerChunk[i]![ch]! * ct.moe.nonExpertParamDelta : 0),
    0,
  );

/**
 * Bytes per parameter of stage i's dense parameter all-gather (the distributed optimizer): the
 * training dtype's weight bytes; with quantized parameters their stage's layer parameters at
 * quantizedGatherBytes and the rest (embedding, output layer, final norm) at the training dtype,
 * averaged over the stage (Megatron keeps them in separate buffers, param_and_grad_buffer.py:914-924,
 * each gathered; the average keeps the bytes).
 */
export function gatherBytesPerParam(
  q: QuantizedWeights | undefined,
  machine: Machine,
  ct: StageWeights,
  i: number,
): number {
  const w = stateBytesPerParam[machine.dtype].weights;
  const total = ct.model.stageParams[i]!;
  if (!q?.params || total <= 0) return w;
  const layers = Math.min(total, stageLayerParams(ct, i));
  return (layers * quantizedGatherBytes(q.recipe) + (total - layers) * w) / total;
}

/** Bytes per parameter of the experts' all-gather over expert-DP: every expert weight is a linear layer's. */
export const expertGatherBytesPerParam = (q: QuantizedWeights | undefined, machine: Machine): number =>
  q?.params ? quantizedGatherBytes(q.recipe) : stateBytesPerParam[machine.dtype].weights;

/** The weights' low-precision work per step (weightCastOf). */
export interface WeightCast {
  /** The busiest stage's weight casts, ms per step (memory-bound). */
  readonly castMs: number;
  /** Their HBM bytes on that stage. */
  readonly castBytes: number;
  /** With quantized parameters: the amax all-reduce over the DP group before the master cast, ms per step. */
  readonly amaxReduceMs: number;
}

/**
 * The weight casts of one step on each stage, the slowest taken (they run in each chunk's first
 * forward and after the optimizer, on the step's path), and the amax all-reduce:
 * - without quantized parameters, Transformer Engine casts each 16-bit weight once per step
 *   (is_first_microbatch): weightCastBytes per element of the stage's layer and expert weights;
 * - with them, quantizedParamCastBytes: its `shard` part on the 1/d this rank's optimizer owns (d
 *   the DP × CP group for the layers, expert-DP for the experts), its `full` part on every weight;
 *   and one all-reduce (MAX) of the amaxes, amaxReduceBytesPerElement per element of the whole
 *   stage's weights, over the DP × CP group (the experts' over expert-DP are taken with it).
 * Each stage's bytes at the HBM rate as one memory-bound kernel (memoryBoundUs).
 */
export function weightCastOf(setup: TrainingSetup, machine: Machine, ct: StageWeights): WeightCast {
  const { system, dtype } = machine;
  const q = quantizedWeightsOf(setup, machine.kernels ?? defaultKernelOptions);
  if (!q) return { castMs: 0, castBytes: 0, amaxReduceMs: 0 };
  const src = dtypeBytes[dtype];
  const d = ct.deg.dp * ct.deg.cp;
  const edp = ct.moe?.degrees.edp ?? 1;
  const per = q.params ? quantizedParamCastBytes(q.recipe, src) : undefined;
  const stageBytes = ct.split.layers.map((_, i) => {
    const layers = stageLayerParams(ct, i);
    const experts = ct.expertParams[i]!.reduce((a, x) => a + x, 0);
    if (!per) return (layers + experts) * weightCastBytes(q.recipe, src);
    return (layers / d + experts / edp) * per.shard + (layers + experts) * per.full;
  });
  const castBytes = Math.max(...stageBytes);
  const castMs = castBytes > 0 ? scaledKernelUs(system, 'memory', memoryBoundUs(castBytes, system.gpu)) / 1e3 : 0;
  if (!q.params || d <= 1) return { castMs, castBytes, amaxReduceMs: 0 };
  const weights = Math.max(
    ...ct.split.layers.map((_, i) => stageLayerParams(ct, i) + ct.expertParams[i]!.reduce((a, x) => a + x, 0)),
  );
  const amaxBytes = weights * amaxReduceBytesPerElement(q.recipe);
  const amaxReduceMs = (system.collectiveBaseUs + collectiveTimeUs('allReduce', amaxBytes, d, ct.links.dpCp)) / 1e3;
  return { castMs, castBytes, amaxReduceMs };
}
