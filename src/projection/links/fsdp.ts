import { dtypeBytes, type TrainDtype } from '../../hardware/dtype.ts';
import type { GpuSpec } from '../../hardware/gpus.ts';
import { collectiveTimeUs, type Interconnect } from '../../hardware/interconnect.ts';
import { ncclFootprint, overlapLossMs, overlapSlowdown } from '../../hardware/overlap-cost.ts';
import type { SystemSpec } from '../../hardware/systems.ts';
import { fsdpSharding, type FsdpSetup, type FsdpSharding } from '../../megatron/fsdp.ts';

/**
 * Bytes per parameter an FSDP job keeps, sharded where `s` shards them over d = DP·cp:
 * weights in the training dtype; gradients in the training dtype too (Megatron-FSDP's main-grads
 * dtype `auto` is the parameters' own, param_and_grad_buffer.py:2306-2315; FSDP2 without a
 * MixedPrecisionPolicy reduces in the parameters' dtype); fp32 main weights and Adam's two fp32
 * moments (--megatron-fsdp-main-params-dtype fp32, arguments.py:3520), 12 bytes, or 8 in fp32
 * where the weights are the main weights.
 */
export function fsdpStateBytes(
  dtype: TrainDtype,
  s: FsdpSharding,
  d: number,
): { weights: number; grads: number; optimizer: number } {
  const b = dtypeBytes[dtype];
  const optimizer = dtype === 'fp32' ? 8 : 12;
  return {
    weights: s.params ? b / d : b,
    grads: s.grads ? b / d : b,
    optimizer: s.optimizer ? optimizer / d : optimizer,
  };
}

/**
 * The unsharded copies an FSDP job holds beside its shards, bytes, for FSDP units (layers) of
 * `layerParams` parameters and a stage of `stageLayers` layers:
 *   weights  ZeRO-3: two units gathered at once, the one computing and the one prefetched
 *            (megatron_fsdp.md, "at least two FSDP units worth of un-sharded weight memory");
 *            FSDP2 without reshard_after_forward: every layer of the stage, gathered in forward
 *            and kept to its backward.
 *   grads    ZeRO-2/3: two units' unsharded gradients, the one being reduce-scattered and the
 *            one computing ("at least two FSDP units worth of un-sharded gradient memory").
 */
export function fsdpUnshardedBytes(
  dtype: TrainDtype,
  s: FsdpSharding,
  layerParams: number,
  stageLayers: number,
): { weights: number; grads: number } {
  const b = dtypeBytes[dtype];
  const weights = !s.params ? 0 : s.gatherInBackward ? 2 * layerParams * b : stageLayers * layerParams * b;
  return { weights, grads: s.grads ? 2 * layerParams * b : 0 };
}

/** What FSDP adds to one layer's forward and backward and to each chunk's pass, ms per micro-batch. */
export interface FsdpLayerTimes {
  /** One unit's parameter all-gather and gradient reduce-scatter, ms (0 where the strategy has none). */
  readonly gatherMs: number;
  readonly reduceScatterMs: number;
  /** Added to each layer's forward / backward: the part of its collectives past its compute, and the compute they slow. */
  readonly layerForwardMs: number;
  readonly layerBackwardMs: number;
  /** Of layerForwardMs + layerBackwardMs, what is waiting on the link (the rest is compute slowed). */
  readonly layerExposedMs: number;
  /** Added once per chunk pass: the first unit's collectives, which no earlier unit's compute hides. */
  readonly chunkForwardMs: number;
  readonly chunkBackwardMs: number;
}

/**
 * Per micro-batch, FSDP unit by unit (one unit per transformer layer): the forward all-gathers
 * each unit's weights (ZeRO-3), prefetching unit l+1 under unit l's compute; the backward
 * all-gathers them again (resharded after forward) and reduce-scatters each unit's gradients
 * (ZeRO-2/3), both on the DP·cp link under the backward of the next unit:
 *   layer add = max(0, c − compute) + overlapLossMs(min(c, compute), slowdown)
 *   chunk add = min(c, compute)       (the first unit waits for its own collectives)
 * with c = ag (forward) or ag + rs (backward), ag = coll(allGather, P_layer · w),
 * rs = coll(reduceScatter, P_layer · g), coll = NCCL's per-call base + the α–β ring time.
 * The compute slowdown is NCCL's SM and HBM footprint beside GEMM-bound work (overlap-cost.ts).
 */
export function fsdpLayerTimes(
  f: FsdpSetup,
  dtype: TrainDtype,
  layerParams: number,
  group: number,
  link: Interconnect,
  system: SystemSpec,
  gpu: GpuSpec,
  layerForwardMs: number,
  layerBackwardMs: number,
): FsdpLayerTimes {
  const s = fsdpSharding(f);
  const b = dtypeBytes[dtype];
  const coll = (op: 'allGather' | 'reduceScatter', bytes: number): number =>
    group > 1 ? (system.collectiveBaseUs + collectiveTimeUs(op, bytes, group, link)) / 1e3 : 0;
  const gatherMs = s.params ? coll('allGather', layerParams * b) : 0;
  const reduceScatterMs = s.grads ? coll('reduceScatter', layerParams * b) : 0;
  const slow = (op: 'allGather' | 'reduceScatter'): number => overlapSlowdown(false, gpu, ncclFootprint(op, link));
  const cF = gatherMs;
  const cB = (s.gatherInBackward ? gatherMs : 0) + reduceScatterMs;
  const add = (c: number, compute: number, f: number): number =>
    Math.max(0, c - compute) + overlapLossMs(Math.min(c, compute), f);
  return {
    gatherMs,
    reduceScatterMs,
    layerExposedMs: Math.max(0, cF - layerForwardMs) + Math.max(0, cB - layerBackwardMs),
    layerForwardMs: add(cF, layerForwardMs, slow('allGather')),
    layerBackwardMs: add(cB, layerBackwardMs, slow(reduceScatterMs > 0 ? 'reduceScatter' : 'allGather')),
    chunkForwardMs: Math.min(cF, layerForwardMs),
    chunkBackwardMs: Math.min(cB, layerBackwardMs),
  };
}

/**
 * The parameter all-gather after the optimizer for Megatron-FSDP's ZeRO-2 (optim_grads keeps whole
 * weights and sharded gradients): the stage's layer parameters gathered once per step, exposed
 * (Megatron-FSDP overlaps the parameter gather for ZeRO-3 only, megatron_fsdp.md "Param All-Gather
 * Overlap"). The embedding and output go with the DP tail's buckets. ms.
 */
export function fsdpGatherAfterStepMs(
  f: FsdpSetup,
  dtype: TrainDtype,
  layerParamsOfStage: number,
  group: number,
  link: Interconnect,
  system: SystemSpec,
): number {
  const s = fsdpSharding(f);
  if (!(s.gatherAfterStep && s.grads) || group <= 1) return 0;
  return (
    (system.collectiveBaseUs + collectiveTimeUs('allGather', layerParamsOfStage * dtypeBytes[dtype], group, link)) / 1e3
  );
}
