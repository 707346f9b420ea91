import type { TrainDtype } from '../hardware/dtype.ts';
import type { SystemName } from '../hardware/systems.ts';
import type { MoeSetup } from './moe.ts';
import type { RecomputeModule } from './recompute-modules.ts';

/** A published MoE training run on Megatron-Core: its source, its job, what it measured, and what the projection cannot express of it. */
export interface MoePublishedRun {
  readonly id: string;
  readonly label: string;
  /** The URL and the row or line as the source gives it. */
  readonly source: { readonly url: string; readonly row: string };
  readonly system: SystemName;
  readonly dtype: TrainDtype;
  /** Linear and expert GEMMs in fp8 (the source's block-wise recipe is priced as the projection's fp8 GEMMs). */
  readonly fp8: boolean;
  readonly gpus: number;
  readonly globalBatch: number;
  readonly microBatch: number;
  readonly model: {
    readonly s: number;
    readonly h: number;
    readonly heads: number;
    readonly groups: number;
    /** --kv-channels where it differs from h / heads (priced as the layer's head width, config.ts kvChannels). */
    readonly kvChannels?: number;
    readonly ffn: number;
    readonly layers: number;
    readonly vocab: number;
  };
  /** Layers the projection splits (absent: model.layers), where it cannot express the source's split. */
  readonly pricedLayers?: number;
  readonly tp: number;
  readonly pp: number;
  readonly vpp: number;
  readonly moe: MoeSetup;
  /** The published figure: the step time, or Megatron's per-GPU model TFLOP/s (step = its FLOPs / (N · rate)). */
  readonly published: { readonly stepS: number } | { readonly tflopsPerGpu: number };
  /**
   * The source's --recompute-modules with selective recomputation ([] for none): not applied to the
   * comparison, which prices the run without it (moeRunApproximations says so).
   */
  readonly recomputeModules: readonly RecomputeModule[];
  /** Flags the source does not state, with the value assumed; and what else the projection prices differently. */
  readonly assumed: readonly string[];
  readonly approximations: readonly string[];
}

/** What the projection prices differently from `run`: its approximations and the source's recompute left out. */
export const moeRunApproximations = (run: MoePublishedRun): string[] => [
  ...(run.recomputeModules.length
    ? [
        `--recompute-modules ${run.recomputeModules.join(' ')} (recomputed in backward): not applied to this comparison (priced on its own: docs/projection-memory-levers.md)`,
      ]
    : []),
  ...run.approximations,
];

/**
 * FLOPs of one iteration as Megatron-LM core_v0.19.0 counts them (training.py
 * num_floating_point_operations, BSHD, GQA, no MTP): per token
 *   6·h·(g·k·F_e·n_moe + g·F_s·n_moe + g·F·n_dense) + 6·(h·(q + 2·kv) + q·h)·L + 6·h·V
 * with g = 3 (SwiGLU), q = kv_channels·heads, kv = kv_channels·groups, plus 6·q·s per token and
 * layer for core attention (causal half, QKᵀ and PV). Router FLOPs are not counted.
 */
export function megatronMoeFlops(run: MoePublishedRun): number {
  const m = run.model;
  const d = m.kvChannels ?? m.h / m.heads;
  const q = d * m.heads;
  const kv = d * m.groups;
  const moeLayers =
    typeof run.moe.layerFreq === 'number'
      ? Math.ceil(m.layers / run.moe.layerFreq)
      : run.moe.layerFreq.filter((x) => x === 1).length;
  const dense = m.layers - moeLayers;
  const mlp =
    6 *
    m.h *
    (3 * run.moe.ffn * run.moe.topk * moeLayers + 3 * (run.moe.sharedFfn ?? 0) * moeLayers + 3 * m.ffn * dense);
  const attention = 6 * (m.h * (q + 2 * kv) + q * m.h) * m.layers;
  const logits = 6 * m.h * m.vocab;
  const tokens = run.globalBatch * m.s;
  return tokens * (mlp + attention + logits) + run.globalBatch * m.s * m.s * 6 * q * m.layers;
}

/** The published step time, s (given, or recovered from Megatron's FLOPs and the per-GPU rate). */
export const moePublishedStepS = (run: MoePublishedRun): number =>
  'stepS' in run.published
    ? run.published.stepS
    : megatronMoeFlops(run) / (run.gpus * run.published.tflopsPerGpu * 1e12);

const moe = (m: Partial<MoeSetup> & Pick<MoeSetup, 'experts' | 'topk' | 'ffn' | 'ep'>): MoeSetup => ({
  layerFreq: 1,
  dispatcher: 'alltoall',
  groupedGemm: true,
  auxLossCoeff: 1e-2,
  etp: 1,
  overlapEpComm: false,
  sharedExpertOverlap: false,
  imbalance: 1,
  ...m,
});

const zoo = 'https://github.com/yanring/Megatron-MoE-ModelZoo';
/** Mixtral-8x22B's model and layout (model_configs/benchmarking/Mixtral-8x22B.yaml, runtime_configs/benchmarking/runtime.conf). */
const mixtral22 = {
  system: 'dgx-h100',
  gpus: 128,
  globalBatch: 256,
  microBatch: 1,
  model: { s: 4096, h: 6144, heads: 48, groups: 8, ffn: 16384, layers: 56, vocab: 32000 },
  tp: 2,
  pp: 8,
  vpp: 7,
  recomputeModules: [],
} as const;
const mixtralAssumed = [
  'vocabulary 32,000 (Llama2Tokenizer; --make-vocab-size-divisible-by 128 · t leaves it unpadded)',
  'H100 SXM nodes of 8 GPUs with 8 × 400 Gb/s NICs (DGX H100)',
];
/** Qwen3-235B-A22B (model_configs/benchmarking/Qwen3-235B-A22B.yaml) on 256 H100. */
const qwen235 = {
  system: 'dgx-h100',
  dtype: 'bf16',
  fp8: false,
  gpus: 256,
  globalBatch: 2048,
  microBatch: 1,
  model: { s: 4096, h: 4096, heads: 64, groups: 4, kvChannels: 128, ffn: 12288, layers: 94, vocab: 151936 },
  pricedLayers: 96,
  recomputeModules: ['moe_act', 'layernorm'],
} as const;
const qwenApprox = [
  '94 layers with --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split (the embedding and the loss each take a layer’s place): priced as 96 layers split evenly',
  'qk-layernorm and the router’s fp32 dtype: not priced',
];
const qwenRow = (r: string): string => `best_practice/qwen3/readme.md, "Performance Results / H100" table: ${r}`;

/** The published MoE runs the projection is checked against (docs/projection-moe.md). */
export const moePublishedRuns: readonly MoePublishedRun[] = [
  {
    id: 'mixtral-8x22b-forced',
    label: 'Mixtral 8x22B, forced balance',
    source: {
      url: `${zoo}/blob/main/best_practice/mixtral/run_mixtral_8x22B.sh`,
      row: '"Dropless training with forced balancing, performance should be around 465 TFLOPS for H100."',
    },
    ...mixtral22,
    dtype: 'bf16',
    fp8: false,
    moe: moe({ experts: 8, topk: 2, ffn: 16384, ep: 8 }),
    published: { tflopsPerGpu: 465 },
    assumed: mixtralAssumed,
    approximations: ['--moe-router-force-load-balancing: uniform routing, as the projection prices by default'],
  },
  {
    id: 'mixtral-8x22b-dropless',
    label: 'Mixtral 8x22B, dropless',
    source: {
      url: `${zoo}/blob/main/best_practice/mixtral/run_mixtral_8x22B.sh`,
      row: '"Dropless training, stable performance should be around 445TFLOPS for H100."',
    },
    ...mixtral22,
    dtype: 'bf16',
    fp8: false,
    moe: moe({ experts: 8, topk: 2, ffn: 16384, ep: 8 }),
    published: { tflopsPerGpu: 445 },
    assumed: [...mixtralAssumed, 'the router’s load imbalance is not stated: priced uniform (--moe-imbalance 1)'],
    approximations: [],
  },
  {
    id: 'mixtral-8x22b-drop',
    label: 'Mixtral 8x22B, capacity 1.0',
    source: {
      url: `${zoo}/blob/main/best_practice/mixtral/run_mixtral_8x22B.sh`,
      row: '"Token Drop training, perf should be around 470TFLOPS for H100." (--moe-expert-capacity-factor 1.0 --moe-pad-expert-input-to-capacity)',
    },
    ...mixtral22,
    dtype: 'bf16',
    fp8: false,
    moe: moe({ experts: 8, topk: 2, ffn: 16384, ep: 8, capacityFactor: 1, padToCapacity: true }),
    published: { tflopsPerGpu: 470 },
    assumed: mixtralAssumed,
    approximations: [],
  },
  {
    id: 'mixtral-8x22b-fp8',
    label: 'Mixtral 8x22B, fp8',
    source: {
      url: `${zoo}/blob/main/best_practice/mixtral/run_mixtral_8x22B.sh`,
      row: '"Use PR=fp8 to enable block-wise FP8 training, performance should be around 560 TFLOPS for H100." (with --moe-router-force-load-balancing)',
    },
    ...mixtral22,
    dtype: 'bf16',
    fp8: true,
    moe: moe({ experts: 8, topk: 2, ffn: 16384, ep: 8 }),
    published: { tflopsPerGpu: 560 },
    assumed: mixtralAssumed,
    approximations: [
      'block-wise fp8 (1×128 activations, 128×128 weights) priced as the projection’s fp8 GEMMs with per-tensor casts',
    ],
  },
  {
    id: 'qwen3-235b-deepep-ep32',
    label: 'Qwen3 235B-A22B, DeepEP, EP 32',
    source: {
      url: `${zoo}/blob/main/best_practice/qwen3/readme.md`,
      row: qwenRow(
        '235B | DeepEP | H100 | BF16 | 256 | 4096 | TP 2 | CP 1 | EP 32 | PP 8 | EDP 1 | ETP 1 | VPP 4 | DP 16 | MBS 1 | GBS 2048 | norm, act | 19.7 s | 245 TF',
      ),
    },
    ...qwen235,
    tp: 2,
    pp: 8,
    vpp: 4,
    moe: moe({ experts: 128, topk: 8, ffn: 1536, ep: 32, dispatcher: 'flex', auxLossCoeff: 1e-3 }),
    published: { stepS: 19.7 },
    assumed: ['H100 SXM nodes of 8 GPUs with 8 × 400 Gb/s NICs (the source: "InfiniBand 8x50 GB/s")'],
    approximations: qwenApprox,
  },
  {
    id: 'qwen3-235b-deepep-ep32-overlap',
    label: 'Qwen3 235B-A22B, DeepEP, EP 32, 1F1B A2A overlap',
    source: {
      url: `${zoo}/blob/main/best_practice/qwen3/readme.md`,
      row: qwenRow('the same row with "+1f1b overlap" | 17.6 s | 276 TF'),
    },
    ...qwen235,
    tp: 2,
    pp: 8,
    vpp: 4,
    moe: moe({ experts: 128, topk: 8, ffn: 1536, ep: 32, dispatcher: 'flex', auxLossCoeff: 1e-3, overlapEpComm: true }),
    published: { stepS: 17.6 },
    assumed: ['"+1f1b overlap" is --overlap-moe-expert-parallel-comm (the Model Zoo’s A2A_OVERLAP)'],
    approximations: qwenApprox,
  },
  {
    id: 'qwen3-235b-a2a-pp32',
    label: 'Qwen3 235B-A22B, all-to-all, EP 8, p 32',
    source: {
      url: `${zoo}/blob/main/best_practice/qwen3/readme.md`,
      row: qwenRow(
        '235B | A2A | H100 | BF16 | 256 | 4096 | TP 2 | CP 1 | EP 8 | PP 32 | EDP 1 | ETP 1 | VPP 3 | DP 4 | MBS 1 | GBS 2048 | norm, act | 24.2 s | 200 TF',
      ),
    },
    ...qwen235,
    tp: 2,
    pp: 32,
    vpp: 3,
    moe: moe({ experts: 128, topk: 8, ffn: 1536, ep: 8, dispatcher: 'alltoall', auxLossCoeff: 1e-3 }),
    published: { stepS: 24.2 },
    assumed: [],
    approximations: qwenApprox,
  },
  {
    id: 'qwen3-235b-deepep-tp4-ep8',
    label: 'Qwen3 235B-A22B, DeepEP, t 4, EP 8',
    source: {
      url: `${zoo}/blob/main/best_practice/qwen3/readme.md`,
      row: qwenRow(
        '235B | DeepEP | H100 | BF16 | 256 | 4096 | TP 4 | CP 1 | EP 8 | PP 8 | EDP 4 | ETP 1 | VPP 4 | DP 8 | MBS 1 | GBS 2048 | (no recompute) | 29.0 s | 167 TF',
      ),
    },
    ...qwen235,
    tp: 4,
    pp: 8,
    vpp: 4,
    moe: moe({ experts: 128, topk: 8, ffn: 1536, ep: 8, dispatcher: 'flex', auxLossCoeff: 1e-3 }),
    published: { stepS: 29.0 },
    assumed: [],
    recomputeModules: [],
    approximations: qwenApprox,
  },
];
