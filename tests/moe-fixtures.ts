// The MoE shapes the projection's unit tests price: a Mixtral-like layer (8 experts of F 14336, top-2,
// h 4096, EP 8) and a small 8-GPU job (h 2048, 4 layers) with its MoE variant (8 experts of its FFN).
import { moeDefaults, type MoeSetup } from '../src/megatron/moe.ts';
import type { TrainingSetup } from '../src/megatron/training-setup.ts';
import type { MoeShapes } from '../src/projection/layer/moe-layer.ts';

/** One MoE layer on 4096 tokens: 8 gated experts of F 14336 at h 4096, top-2, EP 8, grouped GEMM, all-to-all, uniform routing. */
export const mixtralLikeShapes: MoeShapes = {
  tokens: 4096,
  hidden: 4096,
  experts: 8,
  topk: 2,
  ffn: 14336,
  sharedFfn: 0,
  tp: 1,
  etp: 1,
  ep: 8,
  gated: true,
  groupedGemm: true,
  dispatcher: 'alltoall',
  imbalance: 1,
};

/** A small dense job: s 2048, h 2048, 16 heads in 4 groups, FFN 5632, 4 layers on 8 GPUs, G 16, distributed optimizer. */
export const smallDenseJob: TrainingSetup = {
  sizes: { s: 2048, b: 1, h: 2048, heads: 16, groups: 4, ffn: 5632, vocab: 32000 },
  tp: 1,
  sp: false,
  layers: 4,
  gpus: 8,
  globalBatch: 16,
  overlap: true,
  distributedOptimizer: true,
};

/** smallDenseJob with every layer MoE: 8 experts of its FFN, top-2, EP 8, all-to-all, grouped GEMM; `m` overrides. */
export const smallMoeJob = (m: Partial<MoeSetup> = {}): TrainingSetup => ({
  ...smallDenseJob,
  moe: { ...moeDefaults(8, 5632), topk: 2, ep: 8, dispatcher: 'alltoall', groupedGemm: true, ...m },
});

/** The traced ops of one MoE layer on a rank, with the pass each was recorded in: forward, then backward after the loss. */
export const moeLayerPassOrder: readonly (readonly [string, string])[] = [
  ['attention', 'forward'],
  ['moe.experts', 'forward'],
  ['moe.experts.backward', 'backward'],
  ['attention.backward', 'backward'],
];
