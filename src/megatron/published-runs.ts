import type { TrainDtype } from '../hardware/dtype.ts';
import type { SystemName } from '../hardware/systems.ts';
import { megatronFlops } from './megatron-flops.ts';
import type { ParallelLayout } from './parallel-layout.ts';
import { narayananFlops } from './scenarios.ts';
import type { LayerArch } from './layer-arch.ts';
import type { MegatronRelease } from './megatron-release.ts';

/** How a source counted the FLOPs behind its per-GPU figure (so its step time can be recovered). */
export type FlopsCount = 'narayanan-eq3' | 'megatron-core-r0.8';

/** A published Megatron-LM training run: its source, its job flag by flag, and what it measured. */
export interface PublishedRun {
  readonly id: string;
  readonly label: string;
  /** Where the figure is (paper table, repository file at a tag) and the row as the source gives it. */
  readonly source: { readonly citation: string; readonly row: Readonly<Record<string, string | number>> };
  readonly system: SystemName;
  readonly dtype: TrainDtype;
  readonly gpus: number;
  /** Sequences per iteration (--global-batch-size). */
  readonly globalBatch: number;
  readonly model: {
    readonly layerArch: LayerArch;
    readonly s: number;
    readonly h: number;
    readonly heads: number;
    readonly groups: number;
    readonly ffn: number;
    readonly layers: number;
    readonly vocab: number;
  };
  readonly layout: ParallelLayout;
  /** Flash attention (2022 on; Transformer Engine's fused attention in today's Megatron-Core). */
  readonly flashAttention: boolean;
  /** Flags the source does not state, each with the value assumed here. */
  readonly assumed: readonly string[];
  /** The published per-GPU throughput and how it was counted. */
  readonly published: { readonly tflopsPerGpu: number; readonly flops: FlopsCount };
  /** The Megatron-Core release the run's code behaves as, where it matters (megatron-release.ts), and why. */
  readonly release?: { readonly megatronRelease: MegatronRelease; readonly why: string };
}

/** FLOPs of one iteration of `run` by its source's own count. */
export function publishedFlops(run: PublishedRun): number {
  const m = run.model;
  if (run.published.flops === 'narayanan-eq3') return narayananFlops(run.globalBatch, m.s, m.layers, m.h, m.vocab);
  return megatronFlops({ ...m, globalBatch: run.globalBatch, swiglu: m.layerArch === 'llama' });
}

/** The iteration time (s) the source's throughput implies: its FLOPs / (N · per-GPU FLOP/s). */
export const publishedStepS = (run: PublishedRun): number =>
  publishedFlops(run) / (run.gpus * run.published.tflopsPerGpu * 1e12);

const layout = (l: Partial<ParallelLayout> & Pick<ParallelLayout, 'tp' | 'pp' | 'microBatch'>): ParallelLayout => ({
  vpp: 1,
  cp: 1,
  sp: false,
  recompute: 'none',
  distributedOptimizer: false,
  overlapGradReduce: false,
  overlapParamGather: false,
  tpCommOverlap: false,
  ...l,
});

/**
 * Narayanan et al. 2021 (SC21, arXiv:2104.04473), weak scaling of GPT on Selene (DGX A100 80 GB,
 * 8 HDR NICs per node), fp16, seq 2048, vocabulary 51,200, activation recomputation; the rows as
 * NVIDIA/Megatron-LM's README gives them at tag 23.04 (images/cases_april2021.png: model size,
 * hidden, layers, parameters, model-parallel size, GPUs, batch, teraFLOP/s per GPU, % of peak),
 * heads and the t × p split of the model-parallel size from the paper's Table 1. TeraFLOP/s are
 * the paper's eq. (3), which counts the recomputed forward.
 */
const narayananRows: readonly (readonly [
  string,
  number,
  number,
  number,
  number,
  number,
  number,
  number,
  number,
  number,
])[] = [
  // size, h, layers, heads, t, p, GPUs, batch, TFLOP/s, % peak
  ['1.7B', 2304, 24, 24, 1, 1, 32, 512, 137, 44],
  ['3.6B', 3072, 30, 32, 2, 1, 64, 512, 138, 44],
  ['7.5B', 4096, 36, 32, 4, 1, 128, 512, 142, 46],
  ['18B', 6144, 40, 48, 8, 1, 256, 1024, 135, 43],
  ['39B', 8192, 48, 64, 8, 2, 512, 1536, 138, 44],
  ['76B', 10240, 60, 80, 8, 4, 1024, 1792, 140, 45],
  ['145B', 12288, 80, 96, 8, 8, 1536, 2304, 148, 47],
  ['310B', 16384, 96, 128, 8, 16, 1920, 2160, 155, 50],
  ['530B', 20480, 105, 128, 8, 35, 2520, 2520, 163, 52],
  ['1T', 25600, 128, 160, 8, 64, 3072, 3072, 163, 52],
];

const narayanan: readonly PublishedRun[] = narayananRows.map(
  ([size, h, layers, heads, tp, pp, gpus, batch, tf, peak]) => {
    const microBatch = pp === 1 ? 4 : 1;
    return {
      id: `narayanan21-${size.toLowerCase()}`,
      label: `GPT ${size} on ${gpus}×A100 (Narayanan et al. 2021)`,
      source: {
        citation:
          'Narayanan et al. 2021 (arXiv:2104.04473) Table 1; NVIDIA/Megatron-LM README at tag 23.04, images/cases_april2021.png',
        row: {
          'model size': size,
          hidden: h,
          layers,
          heads,
          'model-parallel size': tp * pp,
          't × p': `${tp} × ${pp}`,
          GPUs: gpus,
          batch,
          'teraFLOP/s per GPU': tf,
          '% of peak': peak,
        },
      },
      system: 'dgx-a100',
      dtype: 'fp16',
      gpus,
      globalBatch: batch,
      model: { layerArch: 'gpt', s: 2048, h, heads, groups: heads, ffn: 4 * h, layers, vocab: 51200 },
      layout: layout({ tp, pp, microBatch, recompute: 'full' }),
      flashAttention: false,
      assumed: [
        `--micro-batch-size ${microBatch} (not in the table; ${pp === 1 ? 'as the 1.7B scenario assumes' : 'many micro-batches per pipeline'})`,
        'no interleaved schedule (v = 1; not stated per row)',
        '--recompute-granularity full, uniform, 1 layer (the paper recomputes activations; method not stated)',
      ],
      published: { tflopsPerGpu: tf, flops: 'narayanan-eq3' },
    };
  },
);

/**
 * NVIDIA/Megatron-LM README at tag core_v0.19.0 (images/model_table.png, added July 2024): GPT weak
 * scaling on H100 (DGX H100), bf16, seq 4096, vocabulary 131,072, with --overlap-grad-reduce,
 * --overlap-param-gather (so the distributed optimizer) and --tp-comm-overlap (so sequence
 * parallel); per-GPU teraFLOP/s by training.py's count of the time (core_r0.8.0).
 */
const h100Rows: readonly (readonly [string, number, number, number, number, number, number, number, number, number])[] =
  [
    // size, heads, h, layers, t, p, GPUs, batch, TFLOP/s, MFU %
    ['1.7B', 16, 2048, 24, 1, 1, 48, 192, 408.8, 41],
    ['7.1B', 32, 4096, 30, 2, 1, 96, 192, 465.9, 47],
    ['16B', 48, 6144, 32, 4, 1, 192, 192, 489.1, 49],
    ['32B', 56, 7168, 48, 8, 1, 384, 192, 459.6, 46],
    ['70B', 64, 8192, 84, 8, 2, 768, 384, 419.7, 42],
    ['119B', 80, 10240, 92, 8, 4, 1536, 768, 420.5, 43],
    ['177B', 96, 12288, 96, 8, 6, 2304, 1152, 432.8, 44],
    ['314B', 128, 16384, 96, 8, 8, 3072, 1536, 474.4, 48],
    ['462B', 144, 18432, 112, 8, 16, 6144, 3072, 459.9, 47],
  ];

/** Why the README's H100 runs are core_r0.8's (megatron-release.ts). */
const readmeH100Release = {
  megatronRelease: 'core_r0.8',
  why:
    "the README's scaling figures committed with the table (images/weak_scaling.png, images/strong_scaling.png) " +
    'label the runs "Megatron-Core r0.8.0"; the table was committed on 2024-07-15 (ADLR/megatron-lm!1732, ' +
    '"New scaling figures on H100 GPUs"), and --overlap-param-gather, which it names, dispatched the first ' +
    'gather in optimizer.zero_grad() from 2023-11-17 until ADLR/megatron-lm!1975 (2024-09-07)',
} as const;

const h100: readonly PublishedRun[] = h100Rows.map(([size, heads, h, layers, tp, pp, gpus, batch, tf, mfu]) => ({
  id: `megatron-h100-${size.toLowerCase()}`,
  label: `GPT ${size} on ${gpus}×H100 (Megatron-LM README)`,
  source: {
    citation: 'NVIDIA/Megatron-LM README at tag core_v0.19.0, images/model_table.png',
    row: {
      'model size': size,
      'attention heads': heads,
      'hidden size': h,
      layers,
      'tensor MP': tp,
      'pipeline MP': pp,
      'data-parallel': gpus / (tp * pp),
      GPUs: gpus,
      batch,
      'teraFLOP/s per GPU': tf,
      MFU: `${mfu}%`,
    },
  },
  system: 'dgx-h100',
  dtype: 'bf16',
  gpus,
  globalBatch: batch,
  model: { layerArch: 'gpt', s: 4096, h, heads, groups: heads, ffn: 4 * h, layers, vocab: 131072 },
  layout: layout({
    tp,
    pp,
    microBatch: 1,
    sp: tp > 1,
    distributedOptimizer: true,
    overlapGradReduce: true,
    overlapParamGather: true,
    tpCommOverlap: tp > 1,
  }),
  flashAttention: true,
  assumed: [
    '--micro-batch-size 1 (not stated)',
    'flash attention (Transformer Engine; not stated)',
    'no recomputation (not stated)',
    'no interleaved schedule (v = 1; not stated)',
    'multi-head attention (groups = heads; the table gives heads only)',
  ],
  published: { tflopsPerGpu: tf, flops: 'megatron-core-r0.8' },
  release: readmeH100Release,
}));

/** Every published run the projection is validated against (never fitted to). */
export const publishedRuns: readonly PublishedRun[] = [...narayanan, ...h100];
