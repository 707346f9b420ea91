import { degreesOf, overlapsP2p, p2pOverlapRequired, type TrainingSetup } from '../../megatron/training-setup.ts';
import { defaultKernelOptions, type KernelOptions } from './kernel-options.ts';

/**
 * Every communication overlap the projection prices (seed 004 M102's list, docs/sources.md), each with
 * what it hides and what it costs:
 *   asyncDgrad          the dgrad all-reduce (reduce-scatter under SP) issued asynchronously under
 *                       the wgrad GEMM (Megatron's LinearWithGradAccumulationAndAsyncCommunication,
 *                       layers.py; no flag of its own: on with CUDA_DEVICE_MAX_CONNECTIONS=1)
 *   spRegather          under SP, the re-gather of a ColumnParallelLinear's input issued
 *                       asynchronously under the dgrad GEMM (same function)
 *   tpCommOverlap       --tp-comm-overlap: the synchronous TP all-gathers and reduce-scatters in
 *                       chunks under their GEMMs (Transformer Engine userbuffers)
 *   overlapGradReduce   --overlap-grad-reduce: gradient buckets reduced during backward
 *   overlapParamGather  --overlap-param-gather: the distributed optimizer's parameter all-gather
 *                       under the next forward
 *   overlapP2p          overlap_p2p_comm (--no-overlap-p2p-communication turns it off): pipeline
 *                       sends and receives beside compute, interleaved schedule only
 */
export const overlapFlags = [
  'asyncDgrad',
  'spRegather',
  'tpCommOverlap',
  'overlapGradReduce',
  'overlapParamGather',
  'overlapP2p',
] as const;

/** One overlap the projection prices (`overlapFlags`). */
export type OverlapFlag = (typeof overlapFlags)[number];

/** How each overlap is named: a short column label, its Megatron spelling, and what it hides. */
export const overlapFlagInfo: Readonly<Record<OverlapFlag, { short: string; megatron: string; hides: string }>> = {
  asyncDgrad: {
    short: 'dgrad-AR',
    megatron: 'async dgrad all-reduce (layers.py)',
    hides: 'the dgrad all-reduce (reduce-scatter under SP) under the wgrad GEMM',
  },
  spRegather: {
    short: 'SP-regather',
    megatron: 'async SP re-gather (layers.py)',
    hides: "the SP re-gather of a column-parallel linear's input under its dgrad GEMM",
  },
  tpCommOverlap: {
    short: 'TP-chunks',
    megatron: '--tp-comm-overlap',
    hides: 'the TP all-gathers and reduce-scatters in chunks under their GEMMs (userbuffers)',
  },
  overlapGradReduce: {
    short: 'grad-reduce',
    megatron: '--overlap-grad-reduce',
    hides: 'the DP gradient buckets under backward',
  },
  overlapParamGather: {
    short: 'param-gather',
    megatron: '--overlap-param-gather',
    hides: "the distributed optimizer's parameter all-gather under the next forward",
  },
  overlapP2p: {
    short: 'p2p',
    megatron: 'overlap_p2p_comm (--no-overlap-p2p-communication)',
    hides: 'the pipeline sends and receives beside compute',
  },
};

/** Which overlaps are on, flag by flag. */
export type OverlapSet = Readonly<Record<OverlapFlag, boolean>>;

/** The overlaps `setup` on a machine running `kernels` has on (each only where it has something to hide). */
export function overlapsOf(setup: TrainingSetup, kernels: KernelOptions = defaultKernelOptions): OverlapSet {
  const d = degreesOf(setup);
  const sp = setup.sp && setup.tp > 1;
  return {
    asyncDgrad: setup.overlap && setup.tp > 1,
    spRegather: (setup.overlapSpRegather ?? setup.overlap) && sp,
    tpCommOverlap: kernels.tpCommOverlap,
    overlapGradReduce: (setup.overlapGradReduce ?? false) && d.dp * d.cp > 1,
    overlapParamGather: (setup.overlapParamGather ?? false) && d.dp * d.cp > 1,
    overlapP2p: overlapsP2p(setup) && d.pp > 1,
  };
}

/** `setup` and `kernels` with exactly the overlaps of `on` (every other setting kept). */
export function withOverlaps(
  setup: TrainingSetup,
  kernels: KernelOptions,
  on: ReadonlySet<OverlapFlag>,
): { setup: TrainingSetup; kernels: KernelOptions } {
  return {
    setup: {
      ...setup,
      overlap: on.has('asyncDgrad'),
      overlapSpRegather: on.has('spRegather'),
      overlapGradReduce: on.has('overlapGradReduce'),
      overlapParamGather: on.has('overlapParamGather'),
      overlapP2pComm: on.has('overlapP2p') || p2pOverlapRequired(setup),
    },
    kernels: { ...kernels, tpCommOverlap: on.has('tpCommOverlap') },
  };
}

/** Why an overlap cannot apply to `setup`, or undefined when it can. */
export function notApplicable(flag: OverlapFlag, setup: TrainingSetup): string | undefined {
  const d = degreesOf(setup);
  const sp = setup.sp && setup.tp > 1;
  switch (flag) {
    case 'asyncDgrad':
      return setup.tp > 1 ? undefined : 'no tensor parallelism (t = 1): there is no dgrad all-reduce to hide';
    case 'spRegather':
      return sp ? undefined : 'needs --sequence-parallel (t > 1): without SP the input is not re-gathered in backward';
    case 'tpCommOverlap':
      return sp ? undefined : 'needs --sequence-parallel (t > 1): Megatron asserts it (arguments.py)';
    case 'overlapGradReduce':
      return d.dp * d.cp > 1 ? undefined : 'no data-parallel group (DP × CP = 1): no gradient reduction to hide';
    case 'overlapParamGather':
      if (!setup.distributedOptimizer) return 'needs --use-distributed-optimizer (Megatron asserts it)';
      return d.dp * d.cp > 1 ? undefined : 'no data-parallel group (DP × CP = 1): no parameter all-gather to hide';
    case 'overlapP2p':
      if (!(d.pp > 1 && d.vpp > 1))
        return 'needs the interleaved pipeline schedule (p > 1 and v > 1): arguments.py turns overlap_p2p_comm off without virtual stages';
      return p2pOverlapRequired(setup)
        ? 'cannot be turned off at p = 2: Megatron requires it with the interleaved schedule (arguments.py:972-975), so it stays on'
        : undefined;
  }
}

/** Why a combination of applicable overlaps is not a launch Megatron accepts, or undefined. */
export function combinationRejection(on: ReadonlySet<OverlapFlag>): string | undefined {
  if (on.has('overlapParamGather') && !on.has('overlapGradReduce'))
    return '--overlap-param-gather needs --overlap-grad-reduce (Megatron asserts it, arguments.py)';
  return undefined;
}

/** A combination's label: the short names joined with " + ", or "none". */
export const combinationLabel = (flags: readonly OverlapFlag[]): string =>
  flags.length ? flags.map((f) => overlapFlagInfo[f].short).join(' + ') : 'none';
