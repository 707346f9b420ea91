// The page's settings and their URL-hash form (pure, no DOM), in the manner of tensorflow/playground's state.ts.
import {
  configDefaults,
  configFromPreset,
  modelSizeKeys,
  modelSizesOf,
  presets,
  type LayerConfig,
  type ModelSizes,
  type PresetName,
} from '../../parallel/config.ts';
import { parsePreset, parseSwitch, parseWhole } from '../../parallel/config-parse.ts';
import { chunksOf, formatTpOverlap, parseTpOverlap, tpOverlapOf } from '../../parallel/tp-overlap.ts';
import { parseInterconnect, type Interconnect } from '../../hardware/interconnect.ts';
import { quoted } from '../../core/quote.ts';
import { parseDtype, type TrainDtype } from '../../hardware/dtype.ts';
import { parseGlobalBatch, type GlobalBatchSetting } from '../../megatron/global-batch.ts';
import { defaultSystem, parseSystem } from '../../hardware/systems.ts';
import { systemFilePrefix } from './system-files.ts';
import { parseClusterModel, type ClusterModelChoice } from './cluster-model-choice.ts';
import {
  attentionBackends,
  crossEntropyKernelChoices,
  type CrossEntropyKernels,
  cudaGraphImpls,
  defaultKernelOptions,
  fp8Formats,
  type AttentionBackend,
  type CudaGraphImpl,
  type Fp8Format,
} from '../../projection/layer/kernel-options.ts';
import { layerArchs, type LayerArch } from '../../megatron/layer-arch.ts';
import { formatRankSlowdown, parseRankSlowdown, type RankSlowdown } from '../../core/rank-slowdown.ts';
import { checkPlacementText } from '../../projection/links/placement.ts';
import { pipelineScheduleNames, type PipelineScheduleName } from '../../mesh/pipeline-schedules.ts';
import { maxMeshRanks } from '../../mesh/rank-layout.ts';
import type { MoeScoreFunction } from '../../reference/moe/config.ts';
import { tokenDispatchers, type TokenDispatcher } from '../../megatron/moe.ts';
import { maxSize } from '../../parallel/validate.ts';
import { recomputeChoices, type RecomputeChoice } from '../../megatron/parallel-layout.ts';
import {
  parseOffloadModules,
  parseOffloadTuning,
  type OffloadModule,
  type OffloadTuning,
} from '../../megatron/activation-offload.ts';
import { parseOptimizerOffloadFraction } from '../../projection/step/optimizer-offload.ts';
import { parseCudaGraphModules, type CudaGraphModule } from '../../megatron/cuda-graph-rules.ts';
import {
  defaultFp8Recipe,
  fp4Formats,
  fp8Recipes,
  type Fp4Format,
  type Fp8Recipe,
} from '../../megatron/low-precision.ts';
import {
  defaultRecomputeModules,
  parseRecomputeModules,
  type RecomputeModule,
} from '../../megatron/recompute-modules.ts';
import type { FsdpSetup } from '../../megatron/fsdp.ts';
import { formatFsdpSetting, parseFsdpSetting } from './fsdp-setting.ts';

/** Which pass the timeline shows. */
export type PassView = 'forward' | 'backward' | 'both';

/**
 * Which machine the timeline describes: a real cluster (compute projected on the system's GPU,
 * communication on its links), this browser as the cluster (compute and transport measured
 * here), or the custom mix (compute measured here, communication on the modeled `net` link).
 */
export type MachineMode = 'cluster' | 'browser' | 'custom';

/** Every machine mode, in display order. */
export const machineModes: readonly MachineMode[] = ['cluster', 'browser', 'custom'];

/** Which main view the page shows. */
export type MainView = 'timeline' | 'classroom' | 'gemm' | 'trace';

/**
 * Everything the page shows, as the URL hash holds it. `net` is 'measured' (the in-browser
 * transport), an interconnect preset key, or 'custom:<α µs>:<GB/s>'.
 */
export interface Settings extends ModelSizes {
  readonly preset: PresetName;
  readonly tp: number;
  readonly sp: boolean;
  /** Demonstration (seed 002 M035, docs/sources.md): skip the SP all-reduce of the RMSNorm weight gradients; the oracle then flags dg1, dg2. */
  readonly skipSpNormGradAllReduce: boolean;
  readonly net: string;
  readonly overlap: boolean;
  /** Chunked TP communication overlap on the ranks (src/parallel/tp-overlap.ts): 1 = off, else the chunk count; `#tpoverlap=off|chunks:c`. */
  readonly tpOverlapChunks: number;
  readonly pass: PassView;
  readonly view: MainView;
  /** The classroom's step, 1-based (`#view=classroom&step=5` opens step 5); clamped to the steps there are. */
  readonly step: number;
  readonly machine: MachineMode;
  /** A system of the catalog (src/hardware/systems.ts) or custom:<gpu>:<per node>:<α µs>:<GB/s>. */
  readonly system: string;
  /** The projected training format (the WebGPU run is always fp32). */
  readonly dtype: TrainDtype;
  /** L: transformer layers of the projected model. */
  readonly layers: number;
  /** N: the GPU budget of the cluster panel (t × DP = N). */
  readonly gpus: number;
  /** The cluster panel's global batch (Megatron --global-batch-size): 'auto' is b·N. */
  readonly gbatch: GlobalBatchSetting;
  /** The model of the cluster panel and the advisor: a scenario a cluster would train, a Hugging Face config.json, or this page's layer. */
  readonly cmodel: ClusterModelChoice;
  /** p: pipeline stages of the cluster panel (Megatron --pipeline-model-parallel-size); t × p × DP = N. */
  readonly pp: number;
  /** v: virtual stages per pipeline rank of the cluster panel (--num-virtual-stages-per-pipeline-rank). */
  readonly vpp: number;
  /** d: data-parallel replicas of the mesh the ranks run (pp > 1 or dp > 1 runs t·p·d rank workers; docs/pipeline-view.md). */
  readonly dp: number;
  /** m: micro-batches per replica per step of the mesh run (Megatron's get_num_microbatches). */
  readonly m: number;
  /** The mesh run's pipeline schedule (src/mesh/pipeline-schedules.ts). */
  readonly schedule: PipelineScheduleName;
  /** The mesh run's replicas sync with the distributed optimizer (reduce-scatter, Adam on a shard, all-gather) instead of all-reduce. */
  readonly distopt: boolean;
  /** The cluster panel's kernel switches (src/projection/layer/kernel-options.ts): --arch, --attention-backend, --fp8-format, --cuda-graph-impl. */
  readonly layerArch: LayerArch;
  readonly attn: AttentionBackend;
  readonly fp8: Fp8Format;
  /** --fp8-recipe with the fp8 format, and --fp4-format (NVFP4) in its place (megatron/low-precision.ts). */
  readonly fp8recipe: Fp8Recipe;
  readonly fp4: Fp4Format;
  readonly graphs: CudaGraphImpl;
  /** --cross-entropy (kernel-options.ts): plan, Megatron's unfused loss, --cross-entropy-loss-fusion's native kernels or Transformer Engine's. */
  readonly ce: CrossEntropyKernels;
  /** --cuda-graph-modules with the CUDA graphs (cuda-graph-rules.ts); empty: the whole layer (Megatron's `full`). */
  readonly gscope: readonly CudaGraphModule[];
  /** #slow=r:f (seed 004 M108): rank r dispatches each kernel f times, a straggler; null: off. */
  readonly slow: RankSlowdown | null;
  /** #slowlink=r:f: the hop out of rank r moves each chunk f times; null: off. */
  readonly slowlink: RankSlowdown | null;
  /** Where the ranks sit on the machine's topology (placement.ts): a named placement or custom:<GPU list>. */
  readonly placement: string;
  // Mixture of Experts (docs/moe-view.md): the MoE block in place of the dense MLP, on the page's t ranks.
  /** E: routed experts (--num-experts); 0: the dense MLP. */
  readonly experts: number;
  /** k: experts per token (--moe-router-topk). */
  readonly topk: number;
  /** f_moe: each expert's SwiGLU width (--moe-ffn-hidden-size); 0: the layer's ffn, Megatron's default. */
  readonly moeFfn: number;
  /** EP (--expert-model-parallel-size): the experts split over EP of the t ranks. */
  readonly ep: number;
  /** ETP (--expert-tensor-parallel-size): each expert's FFN split over ETP ranks; ETP·EP divides t. */
  readonly etp: number;
  /** --moe-expert-capacity-factor; null: dropless. */
  readonly capacity: number | null;
  /**
   * --moe-token-dispatcher-type, one setting for the MoE block's ranks and the cluster's experts;
   * flex (DeepEP, NVLink/RDMA GPUs) is the projection's only: refused at the control for the ranks.
   */
  readonly dispatcher: TokenDispatcher;
  /** The shared expert's SwiGLU width (--moe-shared-expert-intermediate-size); 0: none. */
  readonly sharedFfn: number;
  /** --moe-router-score-function. */
  readonly score: MoeScoreFunction;
  /** --moe-aux-loss-coeff: the switch load-balancing loss's coefficient; 0: off. */
  readonly aux: number;
  /** Not Megatron's: a bias on the router logits, expert 0 +skew … expert E − 1 −skew, so imbalance and drops show. */
  readonly skew: number;
  /** Demonstration (seed 002 M036): the MoE region without SP at t > 1, each token routed t times; Megatron refuses it in training. */
  readonly moeNoSp: boolean;
  // The cluster panel's data-parallel and memory flags (docs/projection.md, "On the page"): every flag the advisor searches has one.
  /** cp: context-parallel ranks of the cluster panel (--context-parallel-size); t × p × cp × DP = N. */
  readonly cp: number;
  /** --recompute-granularity of the cluster panel (full: uniform, one layer per checkpoint). */
  readonly recompute: RecomputeChoice;
  /** --recompute-modules under selective recompute (recompute-modules.ts; Megatron's default core_attn). */
  readonly rmodules: readonly RecomputeModule[];
  /** --overlap-grad-reduce on the cluster panel. */
  readonly ogr: boolean;
  /** --overlap-param-gather on the cluster panel (needs the distributed optimizer, `distopt`, or Megatron-FSDP, and `ogr`). */
  readonly opg: boolean;
  /** FSDP on the cluster panel (--use-megatron-fsdp with its strategy, or --use-torch-fsdp2); null: DDP. */
  readonly fsdp: FsdpSetup | null;
  /** --fp8-param-gather on the cluster panel (needs the fp8 format and the distributed optimizer); --fp4-param-gather under fp4. */
  readonly fp8pg: boolean;
  /** --fine-grained-activation-offloading's --offload-modules on the cluster panel; empty: off. */
  readonly offload: readonly OffloadModule[];
  /** --activation-offload-fraction on the cluster panel (with `offload`); null: Megatron's default 1. */
  readonly offloadfrac: number | null;
  /** --min-offloaded-tensor-size in elements on the cluster panel (with `offload`); null: Megatron's default 1,048,576. */
  readonly offloadmin: number | null;
  /** --delta-offload-bytes-across-pp-ranks on the cluster panel (with `offload`); null: Megatron's default 0. */
  readonly offloaddelta: number | null;
  /** --optimizer-cpu-offload's --optimizer-offload-fraction on the cluster panel (with --use-precision-aware-optimizer); null: off. */
  readonly cpuoffload: number | null;
  /** --overlap-cpu-optimizer-d2h-h2d on the cluster panel: the offloaded optimizer's copies and CPU step overlapped chunk by chunk (needs `cpuoffload`). */
  readonly cpuov: boolean;
  /**
   * Megatron's overlap_p2p_comm on the cluster panel; off is --no-overlap-p2p-communication. On is
   * Megatron's default, which applies only with virtual stages (arguments.py:976-979 turns it off at v = 1).
   */
  readonly p2pov: boolean;
  /** --ddp-bucket-size on the cluster panel, parameters per gradient bucket; null: Megatron's max(40M, 1M·DP·cp) (training.py:1552-1567). */
  readonly bucket: number | null;
  /** --moe-grouped-gemm on the cluster panel: one grouped GEMM over a rank's experts (else one GEMM per expert). */
  readonly gg: boolean;
  /** --overlap-moe-expert-parallel-comm on the cluster panel: the EP all-to-alls under another micro-batch's compute. */
  readonly epov: boolean;
  /** --moe-shared-expert-overlap on the cluster panel: the shared experts on a side stream beside dispatch and combine. */
  readonly seov: boolean;
  /**
   * --moe-pad-expert-input-to-capacity on the cluster panel: every expert takes exactly its capacity
   * from each rank, padded (needs the capacity factor; not with flex). The page's own MoE ranks do not pad.
   */
  readonly pad: boolean;
  /** The projection's load-imbalance what-if (`--moe-imbalance`, no Megatron flag): the busiest EP rank's tokens over the mean, ≥ 1. */
  readonly imb: number;
}

/** Every router score function, in display order. */
export const scoreFunctions: readonly MoeScoreFunction[] = ['softmax', 'sigmoid'];

/** A hash key that could not be used, and what the page did instead. */
export interface HashMessage {
  readonly key: string;
  readonly message: string;
}

/** Settings read from a hash, plus a message for every key that was unknown or malformed. */
export interface ParsedHash {
  readonly settings: Settings;
  readonly messages: readonly HashMessage[];
}

/** Every pass view, in display order. */
export const passViews: readonly PassView[] = ['forward', 'backward', 'both'];
/** Every main view, in display order. */
export const mainViews: readonly MainView[] = ['timeline', 'classroom', 'gemm', 'trace'];

/** The size keys, in display order (each overrides the preset's value). */
export const sizeKeys = modelSizeKeys;

/** When a field is written into a link's hash. */
export type HashPresence =
  /** Every link states it. */
  | 'always'
  /** Only where it differs from the default (a demonstration switch, the classroom's slide, the machine). */
  | 'unless-default'
  /** Only where it differs from the preset's value (the sizes). */
  | 'unless-preset';

/** Where a field's control sits, so a validation message naming the field is shown under it. */
export type FieldControl =
  /** <tp-controls>: degree, SP, preset and sizes, pass, communication. */
  | 'controls'
  /** <tp-machine-controls>: the machine the timeline describes. */
  | 'machine'
  /** <tp-mesh-controls>: the rank mesh (pipeline stages, replicas, micro-batches, schedule). */
  | 'mesh'
  /** The view tabs. */
  | 'views'
  /** No control of its own (set by a link or by a view's own navigation). */
  | 'none';

/**
 * One row of the settings table: how a field reads from and writes to the URL hash, its default,
 * whether changing it re-runs the layer on the ranks, and where its control sits. A parser throws
 * a message that says what is wrong; the page then keeps the default and shows the message.
 */
export interface SettingField<T> {
  /** The key in the URL hash. */
  readonly key: string;
  readonly parse: (text: string) => T;
  readonly format: (value: T) => string;
  /** The default; the sizes' default is the preset's value (`presetSize`). */
  readonly fallback: T;
  readonly inHash: HashPresence;
  /** Whether a change re-runs the layer (false: only the view changes). */
  readonly reruns: boolean;
  readonly control: FieldControl;
}

/** The settings table's type: one row per field of Settings. */
export type SettingsTable = { readonly [K in keyof Settings]: SettingField<Settings[K]> };

function parseChoice<T extends string>(key: string, text: string, choices: readonly T[]): T {
  if ((choices as readonly string[]).includes(text)) return text as T;
  throw new Error(`${key} must be one of ${choices.join(', ')}, got ${quoted(text)}.`);
}

/** Checks a `net` value ('measured', a preset key, 'custom:α:B'); throws the interconnect's message. */
export function parseNet(text: string): string {
  if (text !== 'measured') parseInterconnect(text);
  return text;
}

/** The interconnect a `net` value models, or 'measured'. Throws on a malformed value. */
export function commOf(net: string): 'measured' | Interconnect {
  return net === 'measured' ? 'measured' : parseInterconnect(net);
}

const switchText = (on: boolean): string => (on ? '1' : '0');

/** The most a whole-number row takes, and why, in words that follow "at most …". */
interface WholeCap {
  readonly max: number;
  readonly why: string;
}

/**
 * The GPU budget N: the largest published Megatron run in src/megatron/published-runs.ts used 6144
 * H100s; the machine picture prices every placement of N GPUs, which grows faster than N (8192 GPUs
 * took about 3 s here, 32768 took 47 s and 0.5 GB).
 */
export const gpusCap: WholeCap = {
  max: 8192,
  why: 'the largest published Megatron run here used 6144 GPUs, and pricing the placements of more takes too long',
};

/**
 * Pipeline stages p: Megatron's deepest published pipeline, GPT 1T on 3072 A100s (Narayanan et
 * al. 2021), has p = 64; the schedule grows as p·m with m = t·p micro-batches under 'auto' (p = 64:
 * about 3 s for the panel's rows; p = 256: 12 s and 0.5 GB).
 */
export const ppCap: WholeCap = {
  max: 64,
  why: "Megatron's deepest published pipeline (GPT 1T) has 64 stages",
};

/** Replicas d: the mesh holds at most maxMeshRanks rank workers (src/mesh/rank-layout.ts), so d ≤ that at t = p = 1. */
export const dpCap: WholeCap = {
  max: maxMeshRanks,
  why: `a mesh holds at most ${maxMeshRanks} rank workers here`,
};

/**
 * Micro-batches m: every one is a forward and a backward of every block on the ranks; 64 is four
 * times the seeds' largest (seed 001 §1.4: PP8 with 16 micro-batches), where 1F1B's bubble
 * (p − 1)/(m + p − 1) at p = 8 is already under 10%.
 */
export const mCap: WholeCap = {
  max: 64,
  why: "four times the seeds' largest micro-batch count (16), where the 1F1B bubble at p = 8 is under 10%",
};

/**
 * A row of the rank mesh: in a link only where it differs from the default; the TP layer's run does
 * not depend on it (the mesh run has its own key, src/ui/shell/mesh-runs.ts).
 */
const meshRow = { inHash: 'unless-default', reruns: false, control: 'mesh' } as const;

/** A whole-number row (sizes, degree, step, layers, GPUs): at least `min`, and at most `cap.max`. */
const whole = (
  key: string,
  fallback: number,
  row: Pick<SettingField<number>, 'inHash' | 'reruns' | 'control'>,
  min = 1,
  cap?: WholeCap,
): SettingField<number> => ({
  key,
  parse: (t) => {
    const v = parseWhole(key, t, min);
    if (cap && v > cap.max)
      throw new Error(`${key} = ${v} is more than ${cap.max} (${cap.why}): write ${key}=${cap.max} or less.`);
    return v;
  },
  format: String,
  fallback,
  ...row,
});

/** An on/off row, written 1/0. */
const onOff = (
  key: string,
  fallback: boolean,
  row: Pick<SettingField<boolean>, 'inHash' | 'reruns' | 'control'>,
): SettingField<boolean> => ({ key, parse: (t) => parseSwitch(key, t), format: switchText, fallback, ...row });

/** A row that is one of a fixed list of words. */
const choice = <T extends string>(
  key: string,
  choices: readonly T[],
  fallback: T,
  row: Pick<SettingField<T>, 'inHash' | 'reruns' | 'control'>,
): SettingField<T> => ({ key, parse: (t) => parseChoice(key, t, choices), format: String, fallback, ...row });

/** A size row: overrides the preset's value; in a link only where it differs from it. */
const size = (key: (typeof sizeKeys)[number]): SettingField<number> =>
  whole(
    key,
    presets[defaultPreset][key],
    { inHash: 'unless-preset', reruns: true, control: 'controls' },
    key === 'vocab' ? 0 : 1,
  );

/** A kernel switch of the cluster panel: in a link only where it differs from the projection's default. */
const kernelRow = { inHash: 'unless-default', reruns: false, control: 'machine' } as const;

/** Every MoE row: in a link only where it differs from Megatron's default; re-runs; in <tp-moe-controls>. */
const moeRow = { inHash: 'unless-default', reruns: true, control: 'controls' } as const;

/** E: DeepSeek-V3's 256 routed experts, the most of the configs in src/megatron/hf-config.ts. */
export const expertsCap: WholeCap = {
  max: 256,
  why: "DeepSeek-V3's 256 routed experts are the most of a published model here",
};

/** EP and ETP: the page runs at most 64 ranks (the TP select's "any t" input). */
const meshCap: WholeCap = { max: 64, why: 'the page runs at most 64 ranks' };

/** cp: a divisor of the GPU budget N (t × p × cp × DP = N), so at most gpusCap.max; setupConfig checks s against 2·cp. */
export const cpCap: WholeCap = {
  max: gpusCap.max,
  why: `t × p × cp × DP = N and the GPU budget N is at most ${gpusCap.max}`,
};

/**
 * The load-imbalance what-if's largest value: one of EP ranks takes at most all T·k routings, EP times
 * the mean T·k/EP, and the page's EP is at most 64 (meshCap).
 */
export const imbalanceMax = 64;

/** The router skew's largest value: at 20 expert 0's logit leads expert E − 1's by 40, a softmax ratio of e^40. */
export const skewMax = 20;

/** A finite number in [min, max]; `zero` says what 0 means. */
function boundedNumber(key: string, text: string, min: number, max: number, zero: string): number {
  const v = Number(text);
  if (text.trim() === '' || !Number.isFinite(v) || v < min || v > max)
    throw new Error(`${key} must be a number from ${min} (${zero}) to ${max}, got ${quoted(text)}.`);
  return v;
}

/** --moe-expert-capacity-factor as the hash writes it: 'off' (dropless) or a finite number > 0. */
export function parseCapacity(text: string): number | null {
  if (text === 'off') return null;
  const v = Number(text);
  if (text.trim() === '' || !Number.isFinite(v) || v <= 0)
    throw new Error(`capacity must be off (dropless) or a capacity factor > 0 such as 1 or 1.25, got ${quoted(text)}.`);
  return v;
}

/** --optimizer-offload-fraction as the hash writes it: 'off', or the share f that the CLI takes (optimizer-offload.ts parseOptimizerOffloadFraction). */
export const parseCpuOffload = (text: string): number | null =>
  text.trim() === 'off' ? null : parseOptimizerOffloadFraction(text);

/** A tuning flag of the fine-grained activation offload as the hash writes it: 'default' or empty (Megatron's), or the value the CLI takes. */
const offloadTuningRow = (key: string, k: OffloadTuning): SettingField<number | null> => ({
  key,
  parse: (t) => (t.trim() === '' || t.trim() === 'default' ? null : parseOffloadTuning(k, t)),
  format: (v) => (v === null ? 'default' : String(v)),
  fallback: null,
  ...kernelRow,
});

/** --ddp-bucket-size as the hash writes it: 'default' or empty (Megatron's max(40M, 1M·DP·cp)), or whole parameters ≥ 1. */
export function parseBucket(text: string): number | null {
  const t = text.trim();
  if (t === '' || t === 'default') return null;
  try {
    return parseWhole('bucket', t, 1);
  } catch {
    throw new Error(
      `bucket must be the parameters per gradient bucket (--ddp-bucket-size), a whole number ≥ 1 such as 40000000, or default (empty: Megatron's max(40M, 1M·DP·cp)), got ${quoted(text)}.`,
    );
  }
}

/** The default preset: every number of the classroom layer fits on a slide. */
const defaultPreset: PresetName = 'classroom';

/**
 * Every setting of the page, in hash order — the one place a field is declared. Defaults: the
 * classroom preset at t = 2, the smallest degree that communicates, so the first view already
 * shows collectives and exposed time; the timeline view, both passes, Megatron's async dgrad
 * all-reduce overlap on, chunked TP overlap off; the machine a real cluster, the seeds' 8×V100
 * PCIe box in fp16, its ranks placed as Megatron orders them, no rank slowed. `net` (PCIe Gen3,
 * the seeds' box) is the link of the custom machine and of the GEMM view's modeled communication;
 * the cluster machine uses its system's own links. The cluster panel: 12 layers, N = 8 GPUs, p = v = 1,
 * global batch b·N, the projection's default kernels, and the seeds' tiny GPT as its model (a model a
 * cluster trains, not the classroom layer, which projects to an MFU of 0.0%). The rank mesh: one
 * replica (p = d = 1 runs the TP layer alone), m = 4 micro-batches (1F1B's bubble (p − 1)/(m + p − 1)
 * is 20% at p = 2), Megatron's default 1F1B, all-reduce without the distributed optimizer.
 */
export const settingsTable: SettingsTable = {
  preset: {
    key: 'preset',
    parse: parsePreset,
    format: String,
    fallback: defaultPreset,
    inHash: 'always',
    reruns: true,
    control: 'controls',
  },
  s: size('s'),
  b: size('b'),
  h: size('h'),
  heads: size('heads'),
  groups: size('groups'),
  ffn: size('ffn'),
  vocab: size('vocab'),
  tp: whole('tp', 2, { inHash: 'always', reruns: true, control: 'controls' }),
  sp: onOff('sp', false, { inHash: 'always', reruns: true, control: 'controls' }),
  skipSpNormGradAllReduce: onOff('skipnorm', false, { inHash: 'unless-default', reruns: true, control: 'none' }),
  net: {
    key: 'net',
    parse: parseNet,
    format: String,
    fallback: 'pcie-gen3',
    inHash: 'always',
    reruns: true,
    control: 'controls',
  },
  overlap: onOff('overlap', true, { inHash: 'always', reruns: true, control: 'controls' }),
  tpOverlapChunks: {
    key: 'tpoverlap',
    parse: (t) => chunksOf(parseTpOverlap(t)),
    format: (c) => formatTpOverlap(tpOverlapOf(c)),
    fallback: 1,
    inHash: 'unless-default',
    reruns: true,
    control: 'controls',
  },
  pass: choice('pass', passViews, 'both', { inHash: 'always', reruns: false, control: 'controls' }),
  view: choice('view', mainViews, 'timeline', { inHash: 'always', reruns: false, control: 'views' }),
  step: whole('step', 1, { inHash: 'unless-default', reruns: false, control: 'none' }),
  machine: choice('machine', machineModes, 'cluster', { inHash: 'unless-default', reruns: true, control: 'machine' }),
  system: {
    key: 'system',
    // A loaded system file is checked where it is used (system-files.ts systemOf): this tab may not have it.
    parse: (t) => (t.startsWith(systemFilePrefix) && t.length > systemFilePrefix.length ? t : (parseSystem(t), t)),
    format: String,
    fallback: defaultSystem,
    inHash: 'unless-default',
    reruns: true,
    control: 'machine',
  },
  dtype: {
    key: 'dtype',
    parse: parseDtype,
    format: String,
    fallback: 'fp16',
    inHash: 'unless-default',
    reruns: true,
    control: 'machine',
  },
  layers: whole('layers', 12, { inHash: 'unless-default', reruns: false, control: 'machine' }),
  gpus: whole('gpus', 8, { inHash: 'unless-default', reruns: false, control: 'machine' }, 1, gpusCap),
  gbatch: {
    key: 'gbatch',
    parse: parseGlobalBatch,
    format: String,
    fallback: 'auto',
    inHash: 'unless-default',
    reruns: true,
    control: 'machine',
  },
  // A scenario, the page's layer, hf:NAME (a built-in config.json) or hf:pasted (the one pasted in this tab): cluster-model-choice.ts.
  cmodel: {
    key: 'cmodel',
    parse: parseClusterModel,
    format: String,
    fallback: 'seeds-v100',
    inHash: 'unless-default',
    reruns: false,
    control: 'machine',
  },
  // The rank mesh: the cluster panel projects the same p and v.
  pp: whole('pp', 1, meshRow, 1, ppCap),
  vpp: whole('vpp', 1, meshRow),
  dp: whole('dp', 1, meshRow, 1, dpCap),
  m: whole('m', 4, meshRow, 1, mCap),
  schedule: choice('schedule', pipelineScheduleNames, '1f1b', meshRow),
  distopt: onOff('distopt', false, meshRow),
  layerArch: choice('arch', layerArchs, defaultKernelOptions.layerArch, kernelRow),
  attn: choice('attn', attentionBackends, defaultKernelOptions.attentionBackend, kernelRow),
  fp8: choice('fp8', fp8Formats, defaultKernelOptions.fp8, kernelRow),
  fp8recipe: choice('fp8recipe', fp8Recipes, defaultFp8Recipe, kernelRow),
  fp4: choice('fp4', fp4Formats, 'none', kernelRow),
  graphs: choice('graphs', cudaGraphImpls, defaultKernelOptions.cudaGraphImpl, kernelRow),
  ce: choice('ce', crossEntropyKernelChoices, 'plan', kernelRow),
  gscope: {
    key: 'gscope',
    parse: (t) => (t.trim() === '' ? [] : parseCudaGraphModules(t)),
    format: (m) => (m.length ? m.join(',') : 'full'),
    fallback: [],
    ...kernelRow,
  },
  slow: {
    key: 'slow',
    parse: (t) => parseRankSlowdown('slow', t),
    format: formatRankSlowdown,
    fallback: null,
    inHash: 'unless-default',
    reruns: true,
    control: 'machine',
  },
  slowlink: {
    key: 'slowlink',
    parse: (t) => parseRankSlowdown('slowlink', t),
    format: formatRankSlowdown,
    fallback: null,
    inHash: 'unless-default',
    reruns: true,
    control: 'machine',
  },
  // Switched by the machine picture's own buttons (<tp-machine-picture>); the timeline's TP ring is priced under it.
  placement: {
    key: 'placement',
    parse: checkPlacementText,
    format: String,
    fallback: 'megatron',
    inHash: 'unless-default',
    reruns: true,
    control: 'none',
  },
  // Mixture of Experts: one block, every row re-runs and sits in <tp-moe-controls>; defaults are Megatron's (dense, k 2, EP = ETP = 1, dropless, softmax, no aux loss).
  experts: whole('experts', 0, moeRow, 0, expertsCap),
  topk: whole('topk', 2, moeRow),
  moeFfn: whole('moeffn', 0, moeRow, 0, { max: maxSize, why: "the playground's largest size" }),
  ep: whole('ep', 1, moeRow, 1, meshCap),
  etp: whole('etp', 1, moeRow, 1, meshCap),
  capacity: {
    key: 'capacity',
    parse: parseCapacity,
    format: (c) => (c === null ? 'off' : String(c)),
    fallback: null,
    ...moeRow,
  },
  dispatcher: choice('dispatcher', tokenDispatchers, 'alltoall', moeRow),
  sharedFfn: whole('shared', 0, moeRow, 0, { max: maxSize, why: "the playground's largest size" }),
  score: choice('score', scoreFunctions, 'softmax', moeRow),
  aux: {
    key: 'aux',
    parse: (t) => boundedNumber('aux', t, 0, 1, 'no aux loss'),
    format: String,
    fallback: 0,
    ...moeRow,
  },
  skew: {
    key: 'skew',
    parse: (t) => boundedNumber('skew', t, 0, skewMax, 'no skew'),
    format: String,
    fallback: 0,
    ...moeRow,
  },
  moeNoSp: onOff('m036', false, moeRow),
  // The cluster panel's flags: one block, in <tp-machine-controls>, in a link only where not Megatron's default (all off, cp 1).
  cp: whole('cp', 1, kernelRow, 1, cpCap),
  recompute: choice('recompute', recomputeChoices, 'none', kernelRow),
  rmodules: {
    key: 'rmodules',
    parse: parseRecomputeModules,
    format: (m) => m.join(','),
    fallback: defaultRecomputeModules,
    ...kernelRow,
  },
  ogr: onOff('ogr', false, kernelRow),
  opg: onOff('opg', false, kernelRow),
  fsdp: { key: 'fsdp', parse: parseFsdpSetting, format: formatFsdpSetting, fallback: null, ...kernelRow },
  fp8pg: onOff('fp8pg', false, kernelRow),
  // The cluster's MoE flags (cluster-model.ts): Megatron's defaults, all off; imbalance 1 (uniform routing), the CLI's.
  gg: onOff('gg', false, kernelRow),
  epov: onOff('epov', false, kernelRow),
  seov: onOff('seov', false, kernelRow),
  pad: onOff('pad', false, kernelRow),
  imb: {
    key: 'imb',
    parse: (t) => boundedNumber('imb', t, 1, imbalanceMax, 'uniform routing'),
    format: String,
    fallback: 1,
    ...kernelRow,
  },
  offload: {
    key: 'offload',
    parse: (t) => (t.trim() === '' || t.trim() === 'off' ? [] : parseOffloadModules(t)),
    format: (m) => (m.length ? m.join(',') : 'off'),
    fallback: [],
    ...kernelRow,
  },
  offloadfrac: offloadTuningRow('offloadfrac', 'fraction'),
  offloadmin: offloadTuningRow('offloadmin', 'minTensorElements'),
  offloaddelta: offloadTuningRow('offloaddelta', 'deltaBytesPerPpRank'),
  cpuoffload: {
    key: 'cpuoffload',
    parse: parseCpuOffload,
    format: (f) => (f === null ? 'off' : String(f)),
    fallback: null,
    ...kernelRow,
  },
  cpuov: onOff('cpuov', false, kernelRow),
  // Megatron's defaults: overlap_p2p_comm on (applied with v > 1), the bucket size resolved per layout.
  p2pov: onOff('p2pov', true, kernelRow),
  bucket: {
    key: 'bucket',
    parse: parseBucket,
    format: (b) => (b === null ? 'default' : String(b)),
    fallback: null,
    ...kernelRow,
  },
};

/** The fields of Settings in hash order. */
export const settingKeys = Object.keys(settingsTable) as readonly (keyof Settings)[];

/** Every key the hash understands, in order. */
export const hashKeys: readonly string[] = settingKeys.map((k) => settingsTable[k].key);

const controlFields: ReadonlySet<string> = new Set(settingKeys.filter((k) => settingsTable[k].control !== 'none'));

/** True for a field that has a control on the page (a validation message naming it is shown under it). */
export const hasControl = (field: string): field is keyof Settings => controlFields.has(field);

/** Settings built field by field: `value(k)` gives each field's value. */
function settingsFrom(value: <K extends keyof Settings>(k: K) => Settings[K]): Settings {
  const out: Partial<Record<keyof Settings, unknown>> = {};
  for (const k of settingKeys) out[k] = value(k);
  return out as Settings; // every key of the table was set
}

/** Defaults of every field (the table's, with the default preset's sizes). */
export const defaultSettings: Settings = settingsFrom((k) => settingsTable[k].fallback);

/** The key of what a run computes: settings that differ only in fields that do not re-run give the same key. */
export function runKey(s: Settings): string {
  return JSON.stringify(settingKeys.filter((k) => settingsTable[k].reruns).map((k) => s[k]));
}

/** Unknown keys a message names before it says how many more there are. */
const unknownListMax = 8;

/** One message for every unknown key (a link with 200 of them gets one line, not 200). */
function unknownKeysMessage(keys: readonly string[]): HashMessage {
  const named = keys
    .slice(0, unknownListMax)
    .map((k) => quoted(k))
    .join(', ');
  const more = keys.length > unknownListMax ? ` and ${keys.length - unknownListMax} more` : '';
  const what = keys.length === 1 ? `unknown key ${named}` : `${keys.length} unknown keys ${named}${more}`;
  return { key: keys[0], message: `${what} ignored; the keys are ${hashKeys.join(', ')}.` };
}

/**
 * Settings from a location hash ("#tp=4&sp=1&preset=llama-gqa"). The preset sets the sizes, then
 * explicit size keys override them. A malformed value keeps the default and yields a message; so
 * does an unknown key. Never throws.
 */
export function settingsFromHash(hash: string): ParsedHash {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  const messages: HashMessage[] = [];
  const known = new Set<string>(hashKeys);
  const unknown = [...new Set(params.keys())].filter((key) => !known.has(key));
  if (unknown.length) messages.push(unknownKeysMessage(unknown));
  const read = <K extends keyof Settings>(k: K, fallback: Settings[K]): Settings[K] => {
    const { key, parse, format } = settingsTable[k];
    const text = params.get(key);
    if (text === null) return fallback;
    try {
      return parse(text);
    } catch (e) {
      messages.push({
        key,
        message: `${e instanceof Error ? e.message : String(e)} Using ${key}=${format(fallback)}.`,
      });
      return fallback;
    }
  };
  const preset = read('preset', defaultSettings.preset);
  const base: Settings = { ...defaultSettings, preset, ...presets[preset] }; // the preset's sizes are the sizes' fallback
  const settings = settingsFrom((k) => (k === 'preset' ? base[k] : read(k, base[k])));
  return { settings, messages };
}

const isSizeKey = (k: keyof Settings): k is (typeof sizeKeys)[number] => settingsTable[k].inHash === 'unless-preset';

/**
 * The hash of some settings: the fields a link always states, the sizes only where they differ
 * from the preset's, the rest only where they differ from the default.
 * settingsFromHash(hashFromSettings(x)) = x.
 */
export function hashFromSettings(s: Settings): string {
  const p = new URLSearchParams();
  const write = <K extends keyof Settings>(k: K): void => {
    const { key, format, inHash } = settingsTable[k];
    const v = s[k];
    const skip =
      (inHash === 'unless-default' && format(v) === format(defaultSettings[k])) ||
      (inHash === 'unless-preset' && isSizeKey(k) && v === presets[s.preset][k]);
    if (!skip) p.set(key, format(v));
  };
  for (const k of settingKeys) write(k);
  // URLSearchParams escapes ':' in custom:α:B; keep it readable (':' is legal in a fragment).
  return `#${p.toString().replace(/%3A/gi, ':')}`;
}

/** Settings with a new preset: the preset's sizes replace the current ones. */
export function withPreset(s: Settings, preset: PresetName): Settings {
  return { ...s, preset, ...presets[preset] };
}

/** The layer configuration of some settings (seed and numerics from the config defaults). */
export function configOf(s: Settings): LayerConfig {
  return configFromPreset(s.preset, {
    ...modelSizesOf(s),
    tp: s.tp,
    sp: s.sp,
    seed: configDefaults.seed,
    skipSpNormGradAllReduce: s.skipSpNormGradAllReduce,
    tpOverlapChunks: s.tpOverlapChunks,
  });
}
