import type { SystemSpec } from '../../hardware/systems.ts';
import { fsdpForcedOverlaps, type FsdpSetup } from '../../megatron/fsdp.ts';
import type { MoeSetup } from '../../megatron/moe.ts';
import { recomputeChoices, type ParallelLayout, type RecomputeChoice } from '../../megatron/parallel-layout.ts';
import type { RecomputeModule } from '../../megatron/recompute-modules.ts';

/** The values the advisor tries for each flag of a ParallelLayout (every combination is a candidate). */
export interface SearchSpace {
  readonly tp: readonly number[];
  readonly pp: readonly number[];
  readonly vpp: readonly number[];
  readonly cp: readonly number[];
  readonly microBatch: readonly number[];
  readonly sp: readonly boolean[];
  readonly recompute: readonly RecomputeChoice[];
  readonly distributedOptimizer: readonly boolean[];
  readonly overlapGradReduce: readonly boolean[];
  readonly overlapParamGather: readonly boolean[];
  readonly tpCommOverlap: readonly boolean[];
  /** MoE models: EP values, and ETP as 1 or t (`'t'`); a dense model's space has ep [1] and etp ['t'] and sets neither on its layouts. */
  readonly ep?: readonly number[];
  readonly etp?: readonly (1 | 't')[];
  /**
   * FSDP choices ('none': DDP, as the other flags set it); absent: ['none']. Megatron-FSDP turns the
   * distributed optimizer on itself (arguments.py:1106-1111), so it is enumerated with
   * distributedOptimizer true only.
   */
  readonly fsdp?: readonly FsdpChoice[];
  /** The --recompute-modules lists tried with selective recompute (absent: Megatron's default alone). */
  readonly recomputeModules?: readonly (readonly RecomputeModule[])[];
}

/**
 * The module lists a MoE model's search tries with selective recompute: core attention alone,
 * with the experts' activation (moe_act, only with the grouped GEMM: transformer_config.py:1784-1787),
 * and with the whole MoE layer (moe); recompute-modules.ts, moe-step.ts moeRecomputeOf.
 */
export const moeRecomputeChoices = (moe: Pick<MoeSetup, 'groupedGemm'>): (readonly RecomputeModule[])[] => [
  ['core_attn'],
  ...(moe.groupedGemm ? [['core_attn', 'moe_act'] as const] : []),
  ['core_attn', 'moe'],
];

/** An FSDP setup the advisor tries, or 'none' (DDP). */
export type FsdpChoice = FsdpSetup | 'none';

/** The FSDP choices of the default space: DDP, Megatron-FSDP's ZeRO-3 (its default strategy) and ZeRO-2, FSDP2. */
export const defaultFsdpChoices: readonly FsdpChoice[] = [
  'none',
  { impl: 'megatron', strategy: 'optim_grads_params' },
  { impl: 'megatron', strategy: 'optim_grads' },
  { impl: 'torch', reshardAfterForward: true },
];

/** FSDP in a MoE model's search: Megatron-FSDP sharding parameters, gradients and optimizer states, experts over expert-DP. */
export const moeFsdpChoices: readonly FsdpChoice[] = ['none', { impl: 'megatron', strategy: 'optim_grads_params' }];

/** The dimensions of a search space, in enumeration order (the last varies fastest). */
export const searchDimensions = [
  'tp',
  'pp',
  'vpp',
  'cp',
  'microBatch',
  'sp',
  'recompute',
  'distributedOptimizer',
  'overlapGradReduce',
  'overlapParamGather',
  'tpCommOverlap',
] as const satisfies readonly (keyof SearchSpace)[];

/** Powers of two from 1 to `max`. */
const powersOfTwo = (max: number): number[] => {
  const out: number[] = [];
  for (let x = 1; x <= max; x *= 2) out.push(x);
  return out;
};

const both = [false, true] as const;

/**
 * The default space on `system` for a model of `layers` blocks: t in powers of two up to the
 * GPUs of one node (TP stays on NVLink, as Megatron's guidance has it), p up to min(16, L),
 * v ∈ {1, 2, 4}, cp ∈ {1, 2, 4}, b ∈ {1, 2, 4, 8}, every recompute choice and every switch;
 * with MoE, EP in the powers of two that divide E (up to 64) and ETP ∈ {1, t} (Megatron's default
 * ETP is t; 1 keeps each expert whole, the layouts the Model Zoo runs) and, with selective recompute,
 * moeRecomputeChoices; a dense model tries defaultFsdpChoices, a MoE model moeFsdpChoices (FSDP2 with
 * EP > 1 is Megatron's refusal, arguments.py:1002-1003, so only Megatron-FSDP's full sharding beside none).
 */
export function defaultSearchSpace(system: SystemSpec, layers: number, moe?: MoeSetup): SearchSpace {
  return {
    tp: powersOfTwo(system.gpusPerNode),
    pp: powersOfTwo(Math.min(16, layers)),
    vpp: [1, 2, 4],
    cp: [1, 2, 4],
    microBatch: [1, 2, 4, 8],
    sp: both,
    recompute: recomputeChoices,
    distributedOptimizer: both,
    overlapGradReduce: both,
    overlapParamGather: both,
    tpCommOverlap: both,
    ...(moe && {
      ep: powersOfTwo(Math.min(64, moe.experts)).filter((e) => moe.experts % e === 0),
      etp: [1, 't'],
      recomputeModules: moeRecomputeChoices(moe),
    }),
    fsdp: moe ? moeFsdpChoices : defaultFsdpChoices,
  };
}

/** How many candidates `space` holds (the product of its dimensions' sizes). */
export const spaceSize = (space: SearchSpace): number =>
  (searchDimensions.reduce((n, d) => n * space[d].length, 1) / space.recompute.length) *
  space.recompute.reduce((n, r) => n + (r === 'selective' ? (space.recomputeModules?.length ?? 1) : 1), 0) *
  (space.ep?.length ?? 1) *
  (space.etp?.length ?? 1) *
  (space.fsdp?.length ?? 1);

/** Every layout of `space`, each combination once, in odometer order over searchDimensions. */
export function* enumerateLayouts(space: SearchSpace): Generator<ParallelLayout> {
  const moe = space.ep !== undefined;
  const eps = space.ep ?? [1];
  const etps = space.etp ?? ['t'];
  const fsdps = space.fsdp ?? ['none'];
  const moduleLists = (r: RecomputeChoice): readonly (readonly RecomputeModule[] | undefined)[] =>
    r === 'selective' && space.recomputeModules ? space.recomputeModules : [undefined];
  for (const tp of space.tp)
    for (const pp of space.pp)
      for (const vpp of space.vpp)
        for (const cp of space.cp)
          for (const microBatch of space.microBatch)
            for (const sp of space.sp)
              for (const recompute of space.recompute)
                for (const recomputeModules of moduleLists(recompute))
                  for (const distributedOptimizer of space.distributedOptimizer)
                    for (const overlapGradReduce of space.overlapGradReduce)
                      for (const overlapParamGather of space.overlapParamGather)
                        for (const tpCommOverlap of space.tpCommOverlap)
                          for (const ep of eps)
                            for (const etpChoice of etps)
                              for (const fsdp of fsdps) {
                                // ETP 1 and ETP = t are one layout at t = 1.
                                if (etpChoice === 1 && tp === 1 && etps.includes('t')) continue;
                                // Megatron-FSDP turns the distributed optimizer (arguments.py:1106-1111) and, by strategy, the
                                // overlaps on itself (megatron_fsdp.py:328-333): those flags off are the same job.
                                if (fsdp !== 'none' && fsdp.impl === 'megatron') {
                                  const forced = fsdpForcedOverlaps(fsdp);
                                  if (!distributedOptimizer) continue;
                                  if (forced.overlapGradReduce && !overlapGradReduce) continue;
                                  if (forced.overlapParamGather && !overlapParamGather) continue;
                                }
                                yield {
                                  tp,
                                  pp,
                                  vpp,
                                  cp,
                                  microBatch,
                                  sp,
                                  recompute,
                                  ...(recomputeModules && { recomputeModules }),
                                  distributedOptimizer,
                                  overlapGradReduce,
                                  overlapParamGather,
                                  tpCommOverlap,
                                  ...(moe && { ep, etp: etpChoice === 't' ? tp : 1 }),
                                  ...(fsdp !== 'none' && { fsdp }),
                                };
                              }
}
