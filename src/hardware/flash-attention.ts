import { peakFlops, type GpuArch, type GpuSpec } from './gpus.ts';
import type { TrainDtype } from './dtype.ts';
import { kernelModel, type KernelModel } from './kernel-time.ts';
import { clockFactor, type KernelClock } from './sustained-clock.ts';

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
 *   Blackwell: FlashAttention-4 (Zadouri, Hoehnerbach, Shah, Liu, Thakkar, Dao 2026,
 *           arXiv:2603.05451) reaches up to 1613 TFLOP/s forward on B200 in BF16, 71.7% of its
 *           2250 peak, where FlashAttention-3's best on H100 is 740 of 989.5 (74.8%): Hopper's
 *           fractions × (1613/2250)/(740/989.5) = 0.959 — the papers' best forwards set the
 *           level; the shape over head dim, pass, causal mask and sequence stays Hopper's (no
 *           Blackwell figure resolves them: an assumption). The peak those fractions multiply
 *           is Blackwell's own (2.27× Hopper's), so the model follows FA4's measurement, not FA3's.
 *   Volta: FlashAttention-2 and -3 do not run (Ampere or newer): an error.
 */
export type AttentionPass = 'forward' | 'backward';

/** Head dims of the tables, and η per generation and pass at each. */
const headDims = [64, 128, 256] as const;
/** H100 SXM's dense fp16/bf16 peak, TFLOP/s: the papers' figures are fractions of it. */
const h100Tflops = 989.5;
const hopperFwd = [497 / h100Tflops, 648 / h100Tflops, 740 / h100Tflops] as const;
const fa2BwdOverFwd = 0.63 / 0.73;
/** FlashAttention-4's best B200 forward over FlashAttention-3's best H100 forward, as fractions of their peaks. */
export const blackwellOverHopper = 1613 / 2250 / (740 / h100Tflops);
const etaTable: Readonly<Record<Exclude<GpuArch, 'volta'>, Record<AttentionPass, readonly number[]>>> = {
  ampere: {
    forward: [0.73 * (hopperFwd[0] / hopperFwd[1]), 0.73, 0.73],
    backward: [0.63 * (hopperFwd[0] / hopperFwd[1]), 0.63, 0.63],
  },
  hopper: { forward: hopperFwd, backward: hopperFwd.map((e) => e * fa2BwdOverFwd) },
  blackwell: {
    forward: hopperFwd.map((e) => e * blackwellOverHopper),
    backward: hopperFwd.map((e) => e * fa2BwdOverFwd * blackwellOverHopper),
  },
};

/** The fused-attention kernel a backend runs: FlashAttention (`flash`) or cuDNN's (`fused`). */
export type AttentionKernel = 'flash' | 'fused';

/** What the rate of one attention kernel depends on besides its head dim: the sequence and the library. */
export interface AttentionShape {
  /** Tokens per sequence the kernel sees (queries = keys). */
  readonly seq: number;
  readonly kernel: AttentionKernel;
}

/**
 * Hopper's rate by sequence length, head dim 128, from FlashAttention-3's own benchmark (Shah et
 * al. 2024, arXiv:2407.08608, bars labelled in TFLOP/s, H100 80GB SXM5, BF16/FP16, batch × seq =
 * 16k tokens, 2048 hidden): forward with the causal mask (Fig. 5, causal, head dim 128) and
 * backward (Fig. 6, head dim 128), for FlashAttention-3 and for cuDNN, at 512, 1k, 2k, 4k, 8k, 16k.
 * The η table above is the long-sequence, non-causal forward (648 at 16k); a training step runs
 * causal attention at its own length, so on Hopper and Blackwell η is scaled by
 *   figure(kernel, pass, s) / (η(pass, 128) · peak)
 * (linear in log₂ s between the bars, clamped outside) — the same factor at every head dim
 * (measured at 128 only: an assumption for the others).
 */
const hopperBySeq = {
  seqs: [512, 1024, 2048, 4096, 8192, 16384],
  flash: { forward: [292, 423, 521, 579, 602, 616], backward: [316, 424, 501, 542, 559, 561] },
  fused: { forward: [315, 410, 484, 518, 529, 539], backward: [305, 408, 465, 499, 518, 516] },
} as const;

/** Hopper's measured TFLOP/s of `kernel` for `pass` at sequence `seq` (head dim 128; log-linear between bars). */
function hopperTflops(kernel: AttentionKernel, pass: AttentionPass, seq: number): number {
  const xs = hopperBySeq.seqs;
  const ys = hopperBySeq[kernel][pass];
  if (seq <= xs[0]) return ys[0];
  for (let i = 1; i < xs.length; i++) {
    if (seq <= xs[i]!) {
      const f = (Math.log2(seq) - Math.log2(xs[i - 1]!)) / (Math.log2(xs[i]!) - Math.log2(xs[i - 1]!));
      return ys[i - 1]! + f * (ys[i]! - ys[i - 1]!);
    }
  }
  return ys[ys.length - 1]!;
}

/**
 * η of FlashAttention on `gpu` for `pass` at head dim `headDim` (linear between 64, 128, 256;
 * clamped outside); with `shape`, on Hopper and Blackwell, scaled to the kernel and sequence
 * length by FlashAttention-3's measured bars (hopperBySeq). Ampere keeps FlashAttention-2's
 * long-sequence figure.
 */
export function flashEfficiency(gpu: GpuSpec, pass: AttentionPass, headDim: number, shape?: AttentionShape): number {
  const base = baseEfficiency(gpu.arch, gpu.label, pass, headDim);
  if (!shape || gpu.arch === 'ampere') return base;
  const anchor = baseEfficiency('hopper', gpu.label, pass, 128) * h100Tflops;
  return base * (hopperTflops(shape.kernel, pass, shape.seq) / anchor);
}

function baseEfficiency(arch: GpuArch, label: string, pass: AttentionPass, headDim: number): number {
  if (arch === 'volta')
    throw new Error(`${label}: FlashAttention needs an Ampere or newer GPU; use --attention-backend unfused on V100.`);
  const row = etaTable[arch][pass];
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
 * causal halving; backward: 2.5× that) at head dim `headDim`, in `dtype` (fp16 or bf16); `shape`
 * (sequence length and kernel) selects the measured rate on Hopper and Blackwell; `clock`
 * sustained, a training step's (× MSMF/MAMF, sustained-clock.ts: the papers' rates are bursts).
 */
export function flashAttentionUs(
  flops: number,
  headDim: number,
  pass: AttentionPass,
  gpu: GpuSpec,
  dtype: TrainDtype,
  m: KernelModel = kernelModel,
  shape?: AttentionShape,
  clock: KernelClock = 'burst',
): number {
  if (dtype === 'fp32') throw new Error('FlashAttention runs in fp16 or bf16: choose --dtype fp16 or bf16.');
  const rate = clockFactor(gpu, clock) * flashEfficiency(gpu, pass, headDim, shape) * peakFlops(gpu, dtype);
  return (flops / rate) * 1e6 + m.launchUs;
}
