import { weightCopyBytes } from '../../megatron/low-precision.ts';
import { defaultKernelOptions } from '../layer/kernel-options.ts';
import { quantizedWeightsOf, stageLayerParams } from './quantized-params.ts';
import { overlapBuffers, type OverlapBuffer } from '../layer/overlap-buffers.ts';
import { overlapsOf } from '../layer/overlap-flags.ts';
import type { Machine } from '../layer/projected-layer.ts';
import type { TrainingSetup } from '../../megatron/training-setup.ts';
import { fsdpUnshardedBytes } from '../links/fsdp.ts';
import { dpSharding, setupStateBytes } from './fsdp-step.ts';
import type { StageAllocations } from '../pipeline/memory-timeline.ts';
import { holdsEmbedding, holdsOutput } from '../../mesh/pipeline-split.ts';
import type { ChunkTimes } from './chunk-times.ts';
import { dtypeBytes } from '../../hardware/dtype.ts';
import { cudaGraphStage, type CudaGraphStage } from './cuda-graph-memory.ts';

/**
 * What stage i allocates, by lifetime (memory-timeline.ts): its weights, main weights and Adam
 * moments (a 1/(DP·cp) shard with the distributed optimizer) and what the overlaps hold,
 * resident; the gradient buffer per step; per micro-batch each chunk's kept activations (plus
 * the embedding's and the output's on the end stages; local CUDA graphs' input copy); what CUDA
 * graphs hold (cuda-graph-memory.ts), resident; the recompute unit during a backward
 * (on the last stage, or the 16-bit logits gradient, whichever is larger); the logits and the
 * fp32 softmax of cross entropy on the last stage.
 */
export function stageAllocations(
  setup: TrainingSetup,
  machine: Machine,
  ct: ChunkTimes,
): {
  buffers: OverlapBuffer[];
  of: (i: number) => StageAllocations;
  graphs: (i: number) => CudaGraphStage | undefined;
} {
  const { system, dtype } = machine;
  const { deg, split, own, model, rec } = ct;
  const dpGroup = deg.dp * deg.cp;
  const per = setupStateBytes(setup, dtype, dpGroup);
  const sharding = dpSharding(setup);
  const shard = (what: string, sharded: boolean): string => (sharded ? `${what} (1/${dpGroup} shard)` : what);
  // FSDP's unsharded units beside the shards (links/fsdp.ts fsdpUnshardedBytes); a stage with MoE
  // layers gathers a MoE layer's unit, its experts (E/EP, 1/ETP each) with it.
  const unsharded = (i: number) =>
    setup.fsdp
      ? fsdpUnshardedBytes(
          dtype,
          sharding,
          model.layerParams + (ct.moe && ct.expertParams[i]!.some((x) => x > 0) ? ct.moe.expertParams : 0),
          split.layers[i]!.reduce((a, n) => a + n, 0),
        )
      : { weights: 0, grads: 0 };
  const kernels = machine.kernels ?? defaultKernelOptions;
  const buffers = overlapBuffers(
    overlapsOf(setup, kernels),
    setup,
    kernels,
    dtype,
    system.gpu,
    own.tokens[1] - own.tokens[0],
  );
  // Expert parameters (E/EP experts, 1/ETP of each) keep their own state, sharded over expert-DP.
  const edp = ct.moe?.degrees.edp ?? 1;
  const perExpert = setupStateBytes(setup, dtype, edp);
  const experts = (i: number): number => ct.expertParams[i]!.reduce((a, x) => a + x, 0);
  const expertState = (i: number) =>
    experts(i) > 0
      ? [
          ...(quantizedWeightsOf(setup, kernels)?.params
            ? []
            : [{ label: 'expert weights', bytes: experts(i) * perExpert.weights }]),
          {
            label: dpSharding(setup).optimizer
              ? `expert main weights and Adam moments (1/${edp} shard)`
              : 'expert main weights and Adam moments',
            bytes: experts(i) * perExpert.optimizer,
          },
        ]
      : [];
  const moeIn = (i: number, ch: number): number => (ct.moe ? ct.moe.layersPerChunk[i]![ch]! : 0);
  // The linear layers' quantized weight copies under an fp8 or fp4 recipe (low-precision.ts
  // weightCopyBytes) on the stage's layer parameters (norm gains included) and experts, without
  // FSDP (whose gathered units are not modelled in low precision); with --fp8-param-gather or
  // --fp4-param-gather (refused with FSDP) they replace those parameters' 16-bit weights.
  const q = quantizedWeightsOf(setup, kernels);
  const layerLinear = (i: number): number => stageLayerParams(ct, i);
  const fp8Params = q?.params === true;
  const copies = (i: number) =>
    q
      ? [
          {
            label: fp8Params ? 'quantized parameters (rowwise and columnwise)' : 'quantized weight copies',
            bytes: (layerLinear(i) + experts(i)) * weightCopyBytes(q.recipe),
          },
        ]
      : [];
  const impl = kernels.cudaGraphImpl;
  const graphs = (i: number): CudaGraphStage | undefined =>
    impl === 'none'
      ? undefined
      : cudaGraphStage(
          impl,
          {
            s: setup.sizes.s,
            b: setup.sizes.b,
            h: setup.sizes.h,
            t: deg.tp,
            sp: setup.sp,
            cp: deg.cp,
            p: deg.pp,
            v: deg.vpp,
            m: ct.m,
            dtypeBytes: dtypeBytes[dtype],
            overlapEpComm: setup.moe?.overlapEpComm === true,
            scope: kernels.cudaGraphModules,
          },
          i,
          split.layers[i]!,
        );
  const of = (i: number): StageAllocations => {
    const g = graphs(i);
    return {
      resident: [
        {
          label: shard('weights', sharding.params),
          bytes: (model.stageParams[i]! - (fp8Params ? layerLinear(i) : 0)) * per.weights,
        },
        ...copies(i),
        {
          label: shard('main weights and Adam moments', sharding.optimizer),
          bytes: model.stageParams[i]! * per.optimizer,
        },
        ...(unsharded(i).weights > 0 ? [{ label: 'FSDP gathered layer weights', bytes: unsharded(i).weights }] : []),
        ...expertState(i),
        ...buffers.filter((b) => b.bytes > 0).map((b) => ({ label: b.label, bytes: b.bytes })),
        ...(g?.resident ?? []),
      ],
      perStep: [
        { label: shard('gradient buffer', sharding.grads), bytes: model.stageParams[i]! * per.grads },
        ...(unsharded(i).grads > 0 ? [{ label: 'FSDP unsharded layer gradients', bytes: unsharded(i).grads }] : []),
        ...(experts(i) > 0 ? [{ label: 'expert gradient buffer', bytes: experts(i) * perExpert.grads }] : []),
      ],
      keptBytes: (ch, mb) =>
        rec[i]![ch]!.keptBytes +
        (ct.off ? ct.off[i]!.maxOffloadedBytes[ch]! - ct.off[i]!.offloadedBytes(ch, mb) : 0) +
        (holdsEmbedding(i, ch) ? model.embeddingActivation : 0) +
        (holdsOutput(split, i, ch) ? model.outputActivation : 0) +
        (g?.keptPerMicroBatch(ch) ?? 0),
      // The output's backward (its 16-bit logits gradient) runs before the chunk's recomputed forwards: the larger of the two.
      backwardTransientBytes: (ch) =>
        Math.max(rec[i]![ch]!.backwardTransientBytes, holdsOutput(split, i, ch) ? model.logitsGradient : 0),
      // A MoE layer's permutation buffers (its permuted rows and the exchange's output) live through its forward.
      forwardTransientBytes: (ch) =>
        (holdsOutput(split, i, ch) ? model.logitsForward : 0) +
        (moeIn(i, ch) > 0 ? (ct.moe?.permutationBytes ?? 0) : 0),
      lossBytes: (ch) => (holdsOutput(split, i, ch) ? model.lossSoftmax : 0),
    };
  };
  return { buffers, of, graphs };
}
