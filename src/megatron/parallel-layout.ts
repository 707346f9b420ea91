import type { ModelShape } from '../parallel/config.ts';
import { fsdpFlags, type FsdpSetup } from './fsdp.ts';
import { moeRefusals, type MoeSetup } from './moe.ts';
import type { RecomputeModule } from './recompute-modules.ts';

/** Megatron's --recompute-granularity: none, selective (core attention), full (whole blocks). */
export type RecomputeChoice = 'none' | 'selective' | 'full';

/** Every recompute choice, cheapest in memory last. */
export const recomputeChoices: readonly RecomputeChoice[] = ['none', 'selective', 'full'];

/**
 * How a training job is laid out over its GPUs, in Megatron-LM's flags:
 * tp --tensor-model-parallel-size, pp --pipeline-model-parallel-size, vpp virtual stages per
 * pipeline rank (--num-virtual-stages-per-pipeline-rank; 1: no interleaving), cp
 * --context-parallel-size, microBatch --micro-batch-size, sp --sequence-parallel, recompute
 * --recompute-granularity (full: uniform, one layer per checkpoint), distributedOptimizer
 * --use-distributed-optimizer, overlapGradReduce --overlap-grad-reduce, overlapParamGather
 * --overlap-param-gather, tpCommOverlap --tp-comm-overlap. DP = N / (tp · pp · cp).
 */
export interface ParallelLayout {
  readonly tp: number;
  readonly pp: number;
  readonly vpp: number;
  readonly cp: number;
  readonly microBatch: number;
  readonly sp: boolean;
  readonly recompute: RecomputeChoice;
  /** With selective recompute, --recompute-modules (absent: Megatron's default, core_attn). */
  readonly recomputeModules?: readonly RecomputeModule[];
  readonly distributedOptimizer: boolean;
  readonly overlapGradReduce: boolean;
  readonly overlapParamGather: boolean;
  readonly tpCommOverlap: boolean;
  /** MoE models: EP (--expert-model-parallel-size) and ETP (--expert-tensor-parallel-size); absent: 1 and t. */
  readonly ep?: number;
  readonly etp?: number;
  /** FSDP (fsdp.ts: --use-megatron-fsdp with its strategy, or --use-torch-fsdp2); absent: DDP. */
  readonly fsdp?: FsdpSetup;
}

/** A model a cluster trains: the layer's sizes (the micro-batch comes from the layout) and depth. */
export interface ClusterModel {
  readonly sizes: Omit<ModelShape, 'b'>;
  /** L: transformer blocks (--num-layers). */
  readonly layers: number;
  /** Its MoE flags (absent: dense); a layout's ep and etp replace the ones here. */
  readonly moe?: MoeSetup;
}

/** Why Megatron-LM refuses a layout (one reason per rule, in the order they are checked). */
export type LayoutRejection =
  | 'tp-heads'
  | 'gpus'
  | 'pp-layers'
  | 'vpp'
  | 'cp-seq'
  | 'sp-seq'
  | 'batch'
  | 'interleave-batch'
  | 'flag-needs'
  | 'moe'
  | 'fsdp';

/** What each rejection means, with the rule's source (Megatron-LM core_v0.19.0). */
export const layoutRejectionText: Readonly<Record<LayoutRejection, string>> = {
  'tp-heads': 't must divide the attention heads and the query groups',
  gpus: 't · p · cp must divide the GPU budget N (DP = N / (t · p · cp))',
  'pp-layers': 'p · v must divide the layers (arguments.py: layers % p, layers per stage % layers per virtual stage)',
  vpp: 'interleaving (v > 1) needs p > 1 (arguments.py, overlap_p2p_comm on by default)',
  'cp-seq': 'cp > 1 needs s a multiple of 2 · cp (arguments.py: load-balanced CP chunks)',
  'sp-seq': 'sequence parallel needs t > 1 and s / cp a multiple of t',
  batch: 'the global batch must be a multiple of b · DP (m whole micro-batches per replica)',
  'interleave-batch':
    'the interleaved schedule needs m a multiple of p (schedules.py: microbatch_group_size_per_vp_stage defaults to p)',
  'flag-needs':
    '--overlap-param-gather needs --use-distributed-optimizer (or --use-megatron-fsdp) and --overlap-grad-reduce; --tp-comm-overlap needs --sequence-parallel',
  moe: "Megatron's MoE rules (moe.ts moeRefusals: E a multiple of EP, ETP·EP·p dividing N, SP with t > 1, the dispatcher's and overlaps' needs)",
  fsdp: "Megatron's FSDP2 rules (fsdp.ts fsdpRefusals: --use-torch-fsdp2 with p > 1, EP > 1, the distributed optimizer, fp16, tied embeddings or gradient accumulation fusion, arguments.py:1000-1013)",
};

/** The MoE flags of `model` under layout `l` (its EP and ETP), or undefined for a dense model. */
export const layoutMoe = (model: ClusterModel, l: ParallelLayout): MoeSetup | undefined =>
  model.moe && { ...model.moe, ep: l.ep ?? 1, etp: l.etp ?? l.tp };

/** DP of a layout on N GPUs (may be fractional when illegal). */
export const dataParallel = (l: Pick<ParallelLayout, 'tp' | 'pp' | 'cp'>, gpus: number): number =>
  gpus / (l.tp * l.pp * l.cp);

/** m: micro-batches per replica per step (global batch / (b · DP)). */
export const layoutMicroBatches = (l: ParallelLayout, gpus: number, globalBatch: number): number =>
  globalBatch / (l.microBatch * dataParallel(l, gpus));

/** The first Megatron rule `layout` breaks for `model` on N GPUs at `globalBatch`, or undefined. */
export function layoutRejection(
  model: ClusterModel,
  l: ParallelLayout,
  gpus: number,
  globalBatch: number,
): LayoutRejection | undefined {
  const { sizes } = model;
  if (sizes.heads % l.tp !== 0 || sizes.groups % l.tp !== 0) return 'tp-heads';
  if (!Number.isInteger(dataParallel(l, gpus))) return 'gpus';
  if (model.layers % (l.pp * l.vpp) !== 0) return 'pp-layers';
  if (l.vpp > 1 && l.pp === 1) return 'vpp';
  if (l.cp > 1 && sizes.s % (2 * l.cp) !== 0) return 'cp-seq';
  if (l.sp && (l.tp === 1 || (sizes.s / l.cp) % l.tp !== 0)) return 'sp-seq';
  const m = layoutMicroBatches(l, gpus, globalBatch);
  if (!(Number.isInteger(m) && m >= 1)) return 'batch';
  if (l.vpp > 1 && m % l.pp !== 0) return 'interleave-batch';
  if (l.overlapParamGather && !((l.distributedOptimizer || l.fsdp?.impl === 'megatron') && l.overlapGradReduce))
    return 'flag-needs';
  if (l.fsdp?.impl === 'torch' && (l.pp > 1 || (l.ep ?? 1) > 1 || l.distributedOptimizer)) return 'fsdp';
  if (l.tpCommOverlap && !l.sp) return 'flag-needs';
  const moe = layoutMoe(model, l);
  if (
    moe &&
    moeRefusals(moe, {
      tp: l.tp,
      sp: l.sp,
      pp: l.pp,
      vpp: l.vpp,
      gpus,
      layers: model.layers,
      fullRecompute: l.recompute === 'full',
      halfPrecision: true,
      biases: false,
    }).length > 0
  )
    return 'moe';
  return undefined;
}

/** The layout as Megatron-LM launch flags (defaults left out, as a launch line has them). */
export function layoutFlags(l: ParallelLayout): string[] {
  const flags = [
    `--tensor-model-parallel-size ${l.tp}`,
    `--pipeline-model-parallel-size ${l.pp}`,
    `--micro-batch-size ${l.microBatch}`,
  ];
  if (l.vpp > 1) flags.push(`--num-virtual-stages-per-pipeline-rank ${l.vpp}`);
  if (l.cp > 1) flags.push(`--context-parallel-size ${l.cp}`);
  if (l.sp) flags.push('--sequence-parallel');
  if (l.recompute !== 'none') flags.push(`--recompute-granularity ${l.recompute}`);
  if (l.recompute === 'selective' && l.recomputeModules)
    flags.push(`--recompute-modules ${l.recomputeModules.join(' ')}`);
  if (l.distributedOptimizer) flags.push('--use-distributed-optimizer');
  if (l.overlapGradReduce) flags.push('--overlap-grad-reduce');
  if (l.overlapParamGather) flags.push('--overlap-param-gather');
  if (l.tpCommOverlap) flags.push('--tp-comm-overlap');
  if (l.ep !== undefined) flags.push(`--expert-model-parallel-size ${l.ep}`);
  if (l.etp !== undefined && l.etp !== l.tp) flags.push(`--expert-tensor-parallel-size ${l.etp}`);
  if (l.fsdp) flags.push(...fsdpFlagLines(l.fsdp));
  return flags;
}

/** fsdpFlags as launch-line entries, each flag with its value. */
function fsdpFlagLines(f: FsdpSetup): string[] {
  const out: string[] = [];
  for (const x of fsdpFlags(f)) {
    if (x.startsWith('--') || !out.length) out.push(x);
    else out[out.length - 1] += ` ${x}`;
  }
  return out;
}
