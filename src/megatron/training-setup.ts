import { configDefaults, type LayerConfig, type ModelShape } from '../parallel/config.ts';
import { validateConfig } from '../parallel/validate.ts';
import { fsdpRefusals, type FsdpSetup } from './fsdp.ts';
import { cpExchangeRefusals, type CpExchange } from './cp-comm-type.ts';
import type { MegatronRelease } from './megatron-release.ts';
import type { MlaSetup } from './mla.ts';
import type { MoeSetup } from './moe.ts';
import type { ActivationOffload } from './activation-offload.ts';
import { recomputeModuleRefusals, type RecomputeModule } from './recompute-modules.ts';

/**
 * Activation recomputation as Megatron-Core does it (transformer_config.py, core_v0.19.0):
 * `selective` recomputes the submodules of --recompute-modules (default core_attn; Korthikanti et
 * al. 2022 §5; recompute-modules.ts); `full` checkpoints whole layers,
 * `uniform` in units of `layers` consecutive layers (each unit keeps its input only), `block`
 * the first `layers` layers of every pipeline (virtual) stage, one checkpoint each.
 */
export type Recompute =
  | {
      readonly granularity: 'selective';
      /** --recompute-modules (recompute-modules.ts; absent: core_attn, Megatron's default). */
      readonly modules?: readonly RecomputeModule[];
    }
  | { readonly granularity: 'full'; readonly method: 'uniform' | 'block'; readonly layers: number };

/** What a training run on a real cluster is: the layer's sizes, degrees, depth, budget and batch. */
export interface TrainingSetup {
  readonly sizes: ModelShape;
  readonly tp: number;
  readonly sp: boolean;
  /** L: transformer blocks; the embedding, output layer and loss come once. */
  readonly layers: number;
  /** N: GPUs in all; DP = N / (t · p · cp). */
  readonly gpus: number;
  /**
   * Sequences per step over all replicas (Megatron --global-batch-size); each replica runs
   * m = global / (b · DP) micro-batches of b = sizes.b sequences (gradient accumulation), so the
   * batch means the same at every t (seed 002 M039, docs/sources.md: fixed global batch, fixed GPU budget).
   */
  readonly globalBatch: number;
  /**
   * Megatron's async dgrad all-reduce under wgrad (reduce-scatter under SP) and, unless
   * `overlapSpRegather` says otherwise, the SP re-gather of the input under dgrad (the plan's
   * overlap option; LinearWithGradAccumulationAndAsyncCommunication.backward, layers.py).
   */
  readonly overlap: boolean;
  /** Under SP: the re-gather of a ColumnParallelLinear's input issued asynchronously under the dgrad GEMM (absent: as `overlap`). */
  readonly overlapSpRegather?: boolean;
  /**
   * Pipeline p2p overlapped with compute (Megatron's overlap_p2p_comm, on unless
   * --no-overlap-p2p-communication; arguments.py turns it off without virtual stages, so the
   * 1F1B schedule's sends block). Absent: Megatron's default, on exactly when v > 1.
   */
  readonly overlapP2pComm?: boolean;
  /**
   * Full activation recomputation, one layer per checkpoint (--recompute-granularity full
   * --recompute-method uniform --recompute-num-layers 1); `recomputation` overrides it.
   */
  readonly recompute?: boolean;
  /** Recomputation policy (absent: `recompute` decides; neither: none). */
  readonly recomputation?: Recompute;
  /** p: pipeline stages (--pipeline-model-parallel-size), default 1. */
  readonly pp?: number;
  /** v: virtual stages per pipeline rank (--num-virtual-stages-per-pipeline-rank), default 1. */
  readonly vpp?: number;
  /** Layers of the first / last pipeline stage (--decoder-first/last-pipeline-num-layers); the rest split evenly. */
  readonly firstStageLayers?: number;
  readonly lastStageLayers?: number;
  /** cp: context-parallel ranks (--context-parallel-size), default 1. */
  readonly cp?: number;
  /** --cp-comm-type (and --hierarchical-context-parallel-sizes for a2a+p2p), cp-comm-type.ts; absent: p2p, Megatron's default. */
  readonly cpExchange?: CpExchange;
  /** --use-distributed-optimizer: main weights and Adam moments sharded over DP × CP. */
  readonly distributedOptimizer?: boolean;
  /** --overlap-grad-reduce: gradient buckets reduced during backward as they complete. */
  readonly overlapGradReduce?: boolean;
  /** --overlap-param-gather (needs the distributed optimizer): parameter all-gather under the next forward. */
  readonly overlapParamGather?: boolean;
  /** --ddp-bucket-size in parameters (default max(40M, 1M · DP · cp), training.py resolve_ddp_bucket_size; used only with --overlap-grad-reduce). */
  readonly bucketSize?: number;
  /** Embedding and output layer share one weight (Megatron's default; --untie-embeddings-and-output-weights unties). Default false here. */
  readonly tiedEmbeddings?: boolean;
  /** Flash attention (--attention-backend flash): the s×s scores and probabilities are never stored. */
  readonly flashAttention?: boolean;
  /** Mixture of Experts with expert parallelism (moe.ts); absent: every layer's MLP is dense. */
  readonly moe?: MoeSetup;
  /** Multi-latent attention (mla.ts: --multi-latent-attention and its ranks); absent: dense attention. */
  readonly mla?: MlaSetup;
  /** Fully sharded data parallelism (fsdp.ts: --use-megatron-fsdp with its strategy, or --use-torch-fsdp2); absent: DDP. */
  readonly fsdp?: FsdpSetup;
  /** --optimizer-cpu-offload (projection/step/optimizer-offload.ts): part of the optimizer state and step on the host. */
  readonly optimizerCpuOffload?: OptimizerCpuOffload;
  /** The Megatron-Core release the run used where its behaviour differs (megatron-release.ts); absent: core_v0.19. */
  readonly megatronRelease?: MegatronRelease;
  /** --fp8-param-gather (with --fp8-format): the linear layers' parameters held in fp8, no 16-bit copy (low-precision.ts weightCopyBytes). */
  readonly fp8ParamGather?: boolean;
  /** --fp4-param-gather (with --fp4-format): the linear layers' parameters held in NVFP4 and all-gathered packed, ½ byte (low-precision.ts quantizedGatherBytes). */
  readonly fp4ParamGather?: boolean;
  /** --fine-grained-activation-offloading with --offload-modules (activation-offload.ts; projection/step/activation-offload.ts). */
  readonly activationOffload?: ActivationOffload;
}

/** --optimizer-cpu-offload with --optimizer-offload-fraction and --overlap-cpu-optimizer-d2h-h2d (arguments.py:2781-2790). */
export interface OptimizerCpuOffload {
  /** f: the share of this GPU's optimizer parameters whose state and step move to the CPU (Megatron's default 1.0). */
  readonly fraction: number;
  /** --overlap-cpu-optimizer-d2h-h2d: the copies and the CPU step run concurrently. */
  readonly overlapD2hH2d: boolean;
}

/** The degrees of a setup with their defaults, and DP = N / (t · p · cp). */
export interface Degrees {
  readonly tp: number;
  readonly pp: number;
  readonly vpp: number;
  readonly cp: number;
  readonly dp: number;
}

/** The parallel degrees of a setup (no validation beyond defaults; see setupConfig). */
export function degreesOf(s: TrainingSetup): Degrees {
  const pp = s.pp ?? 1;
  const cp = s.cp ?? 1;
  return { tp: s.tp, pp, vpp: s.vpp ?? 1, cp, dp: s.gpus / (s.tp * pp * cp) };
}

/** Whether the pipeline's p2p sends overlap compute (`overlapP2pComm`, default: v > 1 as Megatron has it). */
export const overlapsP2p = (s: TrainingSetup): boolean => s.overlapP2pComm ?? (s.vpp ?? 1) > 1;

/**
 * Whether Megatron requires the p2p overlap: the interleaved schedule without it needs p > 2
 * (arguments.py:967-975, core_v0.19.0), so at p = 2 with v > 1 it cannot be turned off.
 */
export const p2pOverlapRequired = (s: Pick<TrainingSetup, 'pp' | 'vpp'>): boolean =>
  (s.vpp ?? 1) > 1 && (s.pp ?? 1) <= 2;

/**
 * Megatron's refusal of --no-overlap-p2p-communication (`overlapP2pComm` false) where the
 * interleaved schedule needs the overlap (p2pOverlapRequired), or undefined.
 */
export function noP2pOverlapRefusal(s: Pick<TrainingSetup, 'overlapP2pComm' | 'pp' | 'vpp'>): string | undefined {
  if (s.overlapP2pComm !== false || !p2pOverlapRequired(s)) return undefined;
  return `the interleaved schedule (v = ${s.vpp ?? 1}) with --no-overlap-p2p-communication needs p > 2: Megatron asserts it (arguments.py:972-975, "to avoid having multiple p2p sends and recvs between same 2 ranks per communication batch"); drop --no-overlap-p2p-communication or raise p.`;
}

/** The recomputation policy a setup asks for, or undefined for none. */
export function recomputeOf(s: TrainingSetup): Recompute | undefined {
  if (s.recomputation) return s.recomputation;
  return s.recompute ? { granularity: 'full', method: 'uniform', layers: 1 } : undefined;
}

const whole = (name: string, x: number, min: number): void => {
  if (!(Number.isInteger(x) && x >= min)) throw new Error(`${name} (${x}) must be a whole number ≥ ${min}.`);
};

/**
 * The configuration one rank's layer runs (throws with the validation message when illegal):
 * the sizes at t, with the sequence split over cp ranks (s/cp tokens per rank).
 */
export function setupConfig(s: TrainingSetup): LayerConfig {
  const { pp, vpp, cp } = degreesOf(s);
  whole('--context-parallel-size', cp, 1);
  if (cp > 1 && s.sizes.s % (2 * cp) !== 0)
    throw new Error(
      `the sequence length (${s.sizes.s}) must be a multiple of 2·cp = ${2 * cp}: Megatron-Core splits it into 2·cp chunks for causal load balance.`,
    );
  const c: LayerConfig = { ...configDefaults, ...s.sizes, s: s.sizes.s / cp, tp: s.tp, sp: s.sp && s.tp > 1 };
  const v = validateConfig(c);
  if (!v.ok) throw new Error(v.errors.map((e) => e.message).join(' '));
  if (s.cpExchange) {
    // Per TP rank: heads / t query heads, max(1, groups / t) KV heads (a group is replicated when t > groups).
    const refusals = cpExchangeRefusals(s.cpExchange, cp, c.heads / c.tp, Math.max(1, c.groups / c.tp));
    if (refusals.length) throw new Error(refusals.join(' '));
  }
  whole('layers', s.layers, 1);
  whole('--pipeline-model-parallel-size', pp, 1);
  whole('--num-virtual-stages-per-pipeline-rank', vpp, 1);
  if (vpp > 1 && pp === 1) throw new Error(`virtual stages (--vpp ${vpp}) need pipeline parallelism: set --pp ≥ 2.`);
  if (!(Number.isInteger(s.gpus) && s.gpus >= 1 && s.gpus % (s.tp * pp * cp) === 0))
    throw new Error(
      `the GPU budget N (${s.gpus}) must be a multiple of t·p·cp = ${s.tp}·${pp}·${cp} = ${s.tp * pp * cp}: DP = N/(t·p·cp).`,
    );
  checkDataParallelFlags(s);
  if (s.overlapP2pComm && vpp === 1)
    throw new Error(
      'p2p overlap (overlap_p2p_comm) needs the interleaved schedule (v > 1): Megatron turns it off without virtual stages.',
    );
  const p2p = noP2pOverlapRefusal(s);
  if (p2p) throw new Error(p2p);
  const r = recomputeOf(s);
  if (r?.granularity === 'full') whole('--recompute-num-layers', r.layers, 1);
  if (r?.granularity === 'selective' && r.modules) {
    const refusal = recomputeModuleRefusals(r.modules, { moe: s.moe, mla: s.mla !== undefined })[0];
    if (refusal) throw new Error(`${refusal.message} (${refusal.source})`);
  }
  const m = microBatchesOf(s);
  if (pp * vpp * m > maxPipelinePasses)
    throw new Error(
      `the pipeline would schedule p·v·m = ${pp}·${vpp}·${m} = ${pp * vpp * m} forward passes per step, more than the projection's maximum of ${maxPipelinePasses}: lower the global batch, p or v.`,
    );
  return c;
}

/**
 * Most forward passes (p stages × v virtual stages × m micro-batches) a projected step schedules:
 * the pipeline simulation costs time and memory in proportion (p = 256 at m = 4096 took 12 s and
 * 0.5 GB here; global batch 4·10⁶ at p = 4, 47 s and 2.3 GB). 2¹⁷ holds every published run of
 * src/megatron/published-runs.ts (the largest, GPT 1T: p = 64, m = 512) and p = 64 at m = 1024,
 * which prices in about 3 s.
 */
export const maxPipelinePasses = 2 ** 17;

/**
 * The rules of the data-parallel flags alone (part of setupConfig): --overlap-param-gather needs
 * --use-distributed-optimizer or --use-megatron-fsdp, and --overlap-grad-reduce (arguments.py:990-995,
 * core_v0.19.0); --ddp-bucket-size is a whole number ≥ 1; FSDP's rules on the layout (fsdp.ts
 * fsdpRefusals: FSDP2 with p > 1, EP > 1, the distributed optimizer or tied embeddings, and with
 * `run`'s fp16 or gradient accumulation fusion).
 */
export function checkDataParallelFlags(
  s: Pick<
    TrainingSetup,
    | 'overlapParamGather'
    | 'overlapGradReduce'
    | 'distributedOptimizer'
    | 'bucketSize'
    | 'fsdp'
    | 'pp'
    | 'moe'
    | 'tiedEmbeddings'
  >,
  run: { readonly fp16: boolean; readonly gradAccumulationFusion: boolean } = {
    fp16: false,
    gradAccumulationFusion: false,
  },
): void {
  if (s.overlapParamGather && !s.distributedOptimizer && s.fsdp?.impl !== 'megatron')
    throw new Error(
      '--overlap-param-gather needs --use-distributed-optimizer or --use-megatron-fsdp (Megatron asserts it, arguments.py:990-993).',
    );
  if (s.overlapParamGather && !s.overlapGradReduce)
    throw new Error(
      '--overlap-param-gather needs --overlap-grad-reduce: Megatron asserts it ("Must use --overlap-param-gather with --overlap-grad-reduce", arguments.py:994-995); add --overlap-grad-reduce.',
    );
  if (s.bucketSize !== undefined) whole('--ddp-bucket-size', s.bucketSize, 1);
  if (s.fsdp) {
    const refusal = fsdpRefusals(s.fsdp, {
      pp: s.pp ?? 1,
      ep: s.moe?.ep ?? 1,
      distributedOptimizer: s.distributedOptimizer ?? false,
      tiedEmbeddings: s.tiedEmbeddings ?? false,
      ...run,
    })[0];
    if (refusal) throw new Error(`${refusal.message} (${refusal.source})`);
  }
}

/** m = global batch / (b · DP), or an error naming a global batch that divides. */
export function microBatchesOf(s: TrainingSetup): number {
  const { dp, pp, vpp } = degreesOf(s);
  const per = s.sizes.b * dp;
  const m = s.globalBatch / per;
  if (!(Number.isInteger(m) && m >= 1))
    throw new Error(
      `the global batch (${s.globalBatch} sequences) must be a multiple of b·DP = ${s.sizes.b}·${dp} = ${per}.`,
    );
  if (vpp > 1 && m % pp !== 0)
    throw new Error(
      `the interleaved schedule needs the micro-batches per replica (${m}) to be a multiple of p (${pp}) (Megatron's microbatch_group_size_per_vp_stage = p): change the global batch.`,
    );
  return m;
}
