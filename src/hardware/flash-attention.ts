import { peakFlops, type GpuArch, type GpuSpec } from './gpus.ts';
import type { TrainDtype } from './dtype.ts';
import { kernelModel, type KernelModel } from './kernel-time.ts';

/**
 * FlashAttention's time (Megatron --attention-backend flash, or fused: cuDNN's fused attention,
 * priced alike): one kernel per pass that tiles Q·Kᵀ, the online softmax and P·V through SRAM, so
 * no s×s scores or probabilities touch HBM; it reads Q, K, V (and O, dO in backward) once, which
 * is small beside its math, so its time is its FLOPs at the FLOP/s the papers measured:
 *   forward  = F / (η_fwd(arch, d) · peak) + launch
 *   backward = 2.5·F / (η_bwd(arch, d) · peak) + launch     (5 GEMMs to the forward's 2: the FA papers' count)
 * with F = 4·s²·d·heads·b (Q·Kᵀ and P·V), halved under a causal mask (the kernels skip the
 * blocks above the diagonal).
 *
 * η by generation at head dim d (fraction of the dense fp16/bf16 peak, long sequences):
 *   Ampere: FlashAttention-2 (T. Dao, 2023, arXiv:2307.08691, §4.1) reaches up to 73% of A100's
 *           peak in the forward pass and up to 63% in the backward (head dim 128); head dims below
 *           128 scale as the Hopper forward figures do.
 *   Hopper: FlashAttention-3 (Shah et al. 2024, arXiv:2407.08608), forward FP16, 16k tokens:
 *           ≈ 497 TFLOP/s at d = 64, ≈ 648 at d = 128 (read off its Fig. 5), up to 740 (75%, the
 *           abstract) at d = 256; of 989.5. The paper gives the backward as a 1.5–1.75× speed-up
 *           over FlashAttention-2 rather than in TFLOP/s: η_bwd = η_fwd × 0.63/0.73, FA2's measured
 *           backward/forward ratio.
 *   Blackwell: no figure in these papers: Hopper's fractions assumed.
 *   Volta: FlashAttention-2 and -3 do not run (Ampere or newer): an error.
 */
export type AttentionPass = 'forward' | 'backward';

/** Head dims of the tables, and η per generation and pass at each. */
const headDims = [64, 128, 256] as const;
const hopperFwd = [497 / 989.5, 648 / 989.5, 740 / 989.5] as const;
const fa2BwdOverFwd = 0.63 / 0.73;
const etaTable: Readonly<Record<Exclude<GpuArch, 'volta'>, Record<AttentionPass, readonly number[]>>> = {
  ampere: {
    forward: [0.73 * (hopperFwd[0] / hopperFwd[1]), 0.73, 0.73],
    backward: [0.63 * (hopperFwd[0] / hopperFwd[1]), 0.63, 0.63],
  },
  hopper: { forward: hopperFwd, backward: hopperFwd.map((e) => e * fa2BwdOverFwd) },
  blackwell: { forward: hopperFwd, backward: hopperFwd.map((e) => e * fa2BwdOverFwd) },
};

/** η of FlashAttention on `gpu` for `pass` at head dim `headDim` (linear between 64, 128, 256; clamped outside). */
export function flashEfficiency(gpu: GpuSpec, pass: AttentionPass, headDim: number): number {
  if (gpu.arch === 'volta')
    throw new Error(
      `${gpu.label}: FlashAttention needs an Ampere or newer GPU; use --attention-backend unfused on V100.`,
    );
  const row = etaTable[gpu.arch][pass];
  if (headDim <= headDims[0]) return row[0]!;
  for (let i = 1; i < headDims.length; i++) {
    const d0 = headDims[i - 1]!;
    const d1 = headDims[i]!;
    if (headDim <= d1) return row[i - 1]! + ((row[i]! - row[i - 1]!) * (headDim - d0)) / (d1 - d0);
  }
  return row[row.length - 1]!;
}

/**
 * Time (µs) of one FlashAttention pass of `flops` executed FLOPs (forward: Q·Kᵀ + P·V after the
 * causal halving; backward: 2.5× that) at head dim `headDim`, in `dtype` (fp16 or bf16).
 */
export function flashAttentionUs(
  flops: number,
  headDim: number,
  pass: AttentionPass,
  gpu: GpuSpec,
  dtype: TrainDtype,
  m: KernelModel = kernelModel,
): number {
  if (dtype === 'fp32') throw new Error('FlashAttention runs in fp16 or bf16: choose --dtype fp16 or bf16.');
  return (flops / (flashEfficiency(gpu, pass, headDim) * peakFlops(gpu, dtype))) * 1e6 + m.launchUs;
}
