import type { TrainDtype } from '../hardware/dtype.ts';
import type { SystemName } from '../hardware/systems.ts';
import type { TrainingSetup } from './training-setup.ts';

/** A training run to project, with what was measured on the real machine. */
export interface Scenario {
  readonly name: string;
  readonly label: string;
  readonly system: SystemName;
  readonly dtype: TrainDtype;
  /** Everything but t: the fixed-budget table varies t with DP = N/t. */
  readonly setup: Omit<TrainingSetup, 'tp'>;
  readonly degrees: readonly number[];
  readonly source: string;
}

/**
 * The seeds' experiment (seed 001 §1.4, seed 002 M037–M040, docs/sources.md): Megatron-LM on the 8×V100
 * PCIe box, fp16, seq 512, TP1/DP8 → TP8/DP1 at a fixed 8-GPU budget and a fixed global batch (M039).
 * The seeds do not give the "tiny GPT"'s sizes; these are chosen so that its TP1 memory is near the
 * seeds' 2.85 GiB (the projection gives 2.89 GiB) with 8 heads (TP8 must divide them): h 512, 8 heads,
 * SwiGLU FFN 1408 (8h/3 rounded up to 64), GPT-2's vocabulary padded to 50304 (Megatron pads 50257 to a
 * multiple of 128), 10 layers. The batch is the one of Megatron-LM's 8-GPU example,
 * examples/pretrain_gpt_distributed.sh: micro-batch 8, global 64.
 */
export const seedsV100: Scenario = {
  name: 'seeds-v100',
  label: "The seeds' tiny GPT on 8×V100 PCIe (seed 001 §1.4)",
  system: 'v100-pcie-8',
  dtype: 'fp16',
  setup: {
    sizes: { s: 512, b: 8, h: 512, heads: 8, groups: 8, ffn: 1408, vocab: 50304 },
    sp: false,
    layers: 10,
    gpus: 8,
    globalBatch: 64,
    overlap: true,
  },
  degrees: [1, 2, 4, 8],
  source:
    'seed 001 §1.4; sizes chosen for TP1 memory ≈ 2.85 GiB; batch from Megatron-LM examples/pretrain_gpt_distributed.sh',
};

/** The seeds' measurements on that box (seed 001 §1.4). */
export const seedsEvidence = {
  tokensPerS: { tp1: 84_626, tp8: 14_667 },
  memoryGiB: { tp1: 2.85, tp8: 0.473 },
  /** TP8/TP1. */
  throughputRatio: 0.173,
  memoryRatio: 0.166,
  /** Throughput change of SP against no SP at the same t. */
  spThroughputChange: { tp2: -0.159, tp4: -0.193 },
  /** Memory change of SP against no SP at the same t. */
  spMemoryChange: { tp2: -0.03, tp4: -0.093 },
} as const;

/**
 * A published Megatron-LM measurement: Narayanan et al. 2021, "Efficient Large-Scale Language
 * Model Training on GPU Clusters Using Megatron-LM" (SC21), Table 1, first row: 1.7B GPT,
 * 24 heads, h 2304, 24 layers, t = 1, p = 1, 32 A100 GPUs (DGX A100 nodes of Selene), global
 * batch 512, seq 2048, vocab 51200, fp16, activation recomputation on; 137 TFLOP/s per GPU
 * (44% of peak) counted with their eq. (3), F = 96·B·s·l·h²·(1 + s/6h + V/16lh), which includes
 * the recomputed forward. The micro-batch is not in the table: 4 is assumed. Their MLP is GeLU
 * 4h (two GEMMs); ours is SwiGLU with FFN 8h/3 = 6144 (three GEMMs), the same FLOPs and weights.
 */
export const narayanan17B: Scenario = {
  name: 'megatron-1.7b',
  label: 'Megatron-LM 1.7B GPT on 32×A100 (Narayanan et al. 2021, Table 1)',
  system: 'dgx-a100',
  dtype: 'fp16',
  setup: {
    sizes: { s: 2048, b: 4, h: 2304, heads: 24, groups: 24, ffn: 6144, vocab: 51200 },
    sp: false,
    layers: 24,
    gpus: 32,
    globalBatch: 512,
    overlap: true,
    recompute: true,
  },
  degrees: [1],
  source: 'Narayanan et al. 2021 (arXiv:2104.04473), Table 1',
};

/** What that paper reports for it: per-GPU TFLOP/s by their eq. (3). */
export const narayananReported = { tflopsPerGpu: 137 } as const;

/** Their eq. (3): FLOPs of one iteration with activation recomputation. */
export function narayananFlops(B: number, s: number, l: number, h: number, V: number): number {
  return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}

/** Every scenario by name. */
export const scenarios: Readonly<Record<string, Scenario>> = {
  [seedsV100.name]: seedsV100,
  [narayanan17B.name]: narayanan17B,
};
