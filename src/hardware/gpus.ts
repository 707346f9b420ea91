import type { TrainDtype } from './dtype.ts';

/**
 * One GPU model as the projection sees it. Peaks are dense (no 2:4 sparsity), in TFLOP/s;
 * memory is the HBM capacity in GiB (HBM stacks come in binary sizes: "32 GB" V100 = 32 GiB).
 */
export interface GpuSpec {
  readonly name: string;
  readonly label: string;
  /** Dense peak per format: fp32 on CUDA cores; tf32/fp16/bf16/fp8 on tensor cores (absent: not supported). */
  readonly peakTflops: {
    readonly fp32: number;
    readonly tf32?: number;
    readonly fp16: number;
    readonly bf16?: number;
    readonly fp8?: number;
    /** NVFP4 (e2m1 with block scales) on Blackwell's tensor cores. */
    readonly fp4?: number;
  };
  /**
   * Measured maximum achievable matmul TFLOP/s (MAMF: the best of a brute-force search over
   * shapes, torch.matmul, no sparsity) and the shape it was reached at, per tensor-core format,
   * where published; kernel-time.ts derives the main loop's efficiency η from it.
   */
  readonly mamf?: { readonly bf16?: Mamf; readonly fp16?: Mamf; readonly fp8?: Mamf; readonly fp4?: Mamf };
  /**
   * The sustained matmul rate against the boost-burst one, measured in one run on a full node
   * (sustained-clock.ts); absent where none is published.
   */
  readonly sustained?: SustainedMatmul;
  /** Architecture generation: which FlashAttention kernels exist for it (flash-attention.ts). */
  readonly arch: GpuArch;
  /** HBM bandwidth, GB/s (1e9 B/s). */
  readonly hbmGBps: number;
  /** L2 bandwidth, GB/s: what feeds a GEMM tile's operands (see kernel-time.ts). */
  readonly l2GBps: number;
  readonly sms: number;
  readonly memoryGiB: number;
  readonly source: string;
}

/** A maximum-achievable-matmul measurement: TFLOP/s reached at the GEMM [M,K]·[K,N]. */
export interface Mamf {
  readonly tflops: number;
  /** The best shape as published, M × N × K. */
  readonly shape: readonly [number, number, number];
}

/**
 * One node's maximum sustainable matmul FLOP/s (MSMF: the power-saturated rate once the SM clock
 * has settled under its power cap) beside its maximum achievable (MAMF: the boost-clock burst),
 * TFLOP/s, the same mamf-finder run, GPUs, torch and shapes search, every other GPU of the node
 * computing meanwhile.
 */
export interface SustainedMatmul {
  readonly msmf: number;
  readonly mamf: number;
  /** Where the pair was measured, when it is another GPU's (the assumption, stated). */
  readonly measuredOn: string;
}

/**
 * S. Bekman, "Machine Learning Engineering", compute/accelerator/benchmarks/README.md, "What was
 * measured: alone vs all-8 concurrent" (the revision that adds MSMF to mamf-finder.py): bf16, all
 * 8 GPUs × 5 rounds measured at once (n = 40): H200 MSMF 755.5 (1850–1938 MHz) vs MAMF 852.1
 * TFLOP/s (boost 1980 MHz); B200 MSMF 1437.5 (1368–1527 MHz) vs MAMF 1746.7. The H100 is the
 * H200's GH100 at the same 700 W and 132 SMs; GB200's GPU is B200's die (at 1200 W, which would
 * hold a higher clock: B200's pair is the nearest measured Blackwell, an assumption).
 */
const h200Sustained: SustainedMatmul = { msmf: 755.5, mamf: 852.1, measuredOn: 'H200 (8 GPUs, bf16)' };
const b200Sustained: SustainedMatmul = { msmf: 1437.5, mamf: 1746.7, measuredOn: 'B200 (8 GPUs, bf16)' };

/** The GPU generation: Volta (V100), Ampere (A100), Hopper (H100, H200), Blackwell (B200, GB200). */
export type GpuArch = 'volta' | 'ampere' | 'hopper' | 'blackwell';

/**
 * MAMF figures: S. Bekman, "Machine Learning Engineering", compute/accelerator/README.md,
 * "Maximum Achievable Matmul FLOPS comparison table" (github.com/stas00/ml-engineering, 2026-08
 * revision): BF16 A100 SXM 271.2, H100 SXM 794.5 ("H200 is the same"), B200 SXM 1745.0,
 * GB200 1822.0; FP8 (e4m3) H100 SXM 1402.6, H200 SXM 1453.4, B200 SXM 3432.5, GB200 3615.6;
 * each at the best shape M × N × K the table lists (given with each entry below).
 * Micro-level GEMM measurements, not training throughput. No V100 row: V100 keeps the
 * assumed η of kernel-time.ts.
 */
const mamfSource = 'MAMF: ml-engineering "Maximum Achievable Matmul FLOPS comparison table"';
/** bf16 MAMF rows (fp16 assumed equal: the same tensor-core rate on these GPUs). */
const a100Mamf: Mamf = { tflops: 271.2, shape: [1024, 10240, 5120] };
const h100Mamf: Mamf = { tflops: 794.5, shape: [2048, 2048, 13312] };
const b200Mamf: Mamf = { tflops: 1745, shape: [1792, 16128, 3072] };
const gb200Mamf: Mamf = { tflops: 1822, shape: [4096, 9728, 2048] };

/**
 * V100's L2 bandwidth was measured at 2155 GB/s (Jia, Maggioni, Staiger, Scarpazza 2018,
 * "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking", arXiv:1804.06826, §3);
 * the A100 whitepaper gives A100 2.3× V100's L2 read bandwidth.
 */
const v100L2 = 2155;

/** The catalog. Datasheet figures; each entry names its datasheet. */
export const gpus = {
  /** NVIDIA Tesla V100 datasheet (SXM2): 15.7 TFLOP/s fp32, 125 tensor, 900 GB/s HBM2, 32 GB; 80 SMs (Volta whitepaper). */
  'v100-sxm2': {
    name: 'v100-sxm2',
    label: 'V100 SXM2 32 GB',
    peakTflops: { fp32: 15.7, fp16: 125 },
    hbmGBps: 900,
    l2GBps: v100L2,
    sms: 80,
    memoryGiB: 32,
    arch: 'volta',
    source: 'NVIDIA V100 datasheet (SXM2: 15.7 fp32, 125 fp16 tensor TFLOP/s, 900 GB/s); 80 SMs (Volta whitepaper)',
  },
  /** NVIDIA Tesla V100 datasheet (PCIe): 14 TFLOP/s fp32, 112 tensor, 900 GB/s HBM2, 32 GB; 80 SMs. */
  'v100-pcie': {
    name: 'v100-pcie',
    label: 'V100 PCIe 32 GB',
    peakTflops: { fp32: 14, fp16: 112 },
    hbmGBps: 900,
    l2GBps: v100L2,
    sms: 80,
    memoryGiB: 32,
    arch: 'volta',
    source: 'NVIDIA V100 datasheet (PCIe: 14 fp32, 112 fp16 tensor TFLOP/s, 900 GB/s); 80 SMs (Volta whitepaper)',
  },
  /**
   * NVIDIA A100 datasheet (80 GB SXM): 19.5 fp32, 156 tf32, 312 fp16/bf16 dense TFLOP/s,
   * 2039 GB/s HBM2e; 108 SMs (A100 whitepaper).
   */
  'a100-sxm-80gb': {
    name: 'a100-sxm-80gb',
    label: 'A100 SXM 80 GB',
    peakTflops: { fp32: 19.5, tf32: 156, fp16: 312, bf16: 312 },
    mamf: { bf16: a100Mamf, fp16: a100Mamf },
    hbmGBps: 2039,
    l2GBps: 2.3 * v100L2,
    sms: 108,
    memoryGiB: 80,
    arch: 'ampere',
    source: `NVIDIA A100 datasheet (80 GB SXM: 19.5 fp32, 156 tf32, 312 fp16/bf16 dense, 2039 GB/s); 108 SMs and L2 2.3× V100 (A100 whitepaper); ${mamfSource} (bf16 271.2; fp16 assumed equal)`,
  },
  /**
   * NVIDIA A100 datasheet (40 GB SXM, the GPU of the 2020 DGX A100): the same SM array and peaks
   * as the 80 GB part, HBM2 at 1555 GB/s, 40 GB (binary: 5 stacks × 8 GiB).
   */
  'a100-sxm-40gb': {
    name: 'a100-sxm-40gb',
    label: 'A100 SXM 40 GB',
    peakTflops: { fp32: 19.5, tf32: 156, fp16: 312, bf16: 312 },
    mamf: { bf16: a100Mamf, fp16: a100Mamf },
    hbmGBps: 1555,
    l2GBps: 2.3 * v100L2,
    sms: 108,
    memoryGiB: 40,
    arch: 'ampere',
    source: `NVIDIA A100 datasheet (40 GB SXM: 312 fp16/bf16 dense, 1555 GB/s HBM2); 108 SMs (A100 whitepaper); ${mamfSource} (A100 SXM bf16 271.2, measured on the 80 GB part)`,
  },
  /**
   * NVIDIA H100 datasheet (SXM): 67 fp32, 989 tf32 and 1979 fp16/bf16 TFLOP/s *with sparsity*,
   * so 494.5 and 989.5 dense; 3.35 TB/s HBM3; 132 SMs (H100 whitepaper). Its L2 bandwidth is not
   * published: assumed A100's per SM per clock, scaled by SMs × boost clock (132·1.98 GHz vs
   * 108·1.41 GHz = 1.72×).
   */
  'h100-sxm': {
    name: 'h100-sxm',
    label: 'H100 SXM 80 GB',
    peakTflops: { fp32: 67, tf32: 494.5, fp16: 989.5, bf16: 989.5, fp8: 1979 },
    mamf: { bf16: h100Mamf, fp16: h100Mamf, fp8: { tflops: 1402.6, shape: [1024, 9216, 14336] } },
    sustained: h200Sustained,
    hbmGBps: 3350,
    l2GBps: 2.3 * v100L2 * 1.72,
    sms: 132,
    memoryGiB: 80,
    arch: 'hopper',
    source: `NVIDIA H100 datasheet (SXM: 67 fp32; 989/1979/3958 tf32/fp16/fp8 with sparsity → 494.5/989.5/1979 dense; 3.35 TB/s); 132 SMs (H100 whitepaper); L2 assumed; ${mamfSource} (bf16 794.5, fp8 1402.6)`,
  },
  /**
   * NVIDIA H200 datasheet (SXM): the H100's compute (989.5 bf16, 1979 fp8 dense) with 141 GB of
   * HBM3e at 4.8 TB/s. The 141 GB are decimal as printed: 141e9 B = 131.3 GiB. 132 SMs, L2 as H100.
   */
  'h200-sxm': {
    name: 'h200-sxm',
    label: 'H200 SXM 141 GB',
    peakTflops: { fp32: 67, tf32: 494.5, fp16: 989.5, bf16: 989.5, fp8: 1979 },
    mamf: { bf16: h100Mamf, fp16: h100Mamf, fp8: { tflops: 1453.4, shape: [1280, 4096, 12032] } },
    sustained: h200Sustained,
    hbmGBps: 4800,
    l2GBps: 2.3 * v100L2 * 1.72,
    sms: 132,
    memoryGiB: 141e9 / 2 ** 30,
    arch: 'hopper',
    source: `NVIDIA H200 datasheet (SXM: H100 compute, 141 GB HBM3e, 4.8 TB/s); 132 SMs; ${mamfSource} (bf16 as H100, fp8 1453.4)`,
  },
  /**
   * NVIDIA DGX B200 datasheet: 8 GPUs, 72 PFLOP/s fp8 training and 144 PFLOP/s fp4 (sparse),
   * 1,440 GB HBM3e, 64 TB/s: per GPU 4.5 PFLOP/s fp8, 9 fp4 and 2.25 bf16 dense, 180 GB, 8 TB/s.
   * fp32 80 TFLOP/s and tf32 1125 dense (HGX B200 spec, as tabled by ml-engineering). SMs: NVIDIA
   * does not print them; 148 is what CUDA reports (device attribute multiProcessorCount, quoted
   * in FlashAttention and CUTLASS Blackwell examples). L2 bandwidth unpublished: A100's per SM
   * per clock scaled by 148 SMs × 1.965 GHz (ml-engineering's device-reported max SM clock) over
   * 108 × 1.41 GHz = 1.91×.
   */
  b200: {
    name: 'b200',
    label: 'B200 SXM 180 GB',
    peakTflops: { fp32: 80, tf32: 1125, fp16: 2250, bf16: 2250, fp8: 4500, fp4: 9000 },
    mamf: { bf16: b200Mamf, fp16: b200Mamf, fp8: { tflops: 3432.5, shape: [15360, 4096, 3072] } },
    sustained: b200Sustained,
    hbmGBps: 8000,
    l2GBps: 2.3 * v100L2 * 1.91,
    sms: 148,
    memoryGiB: 180e9 / 2 ** 30,
    arch: 'blackwell',
    source: `NVIDIA DGX B200 datasheet (per GPU: 9 PF fp4, 4.5 PF fp8, 2.25 PF bf16 dense, 180 GB, 8 TB/s); 148 SMs as CUDA reports; L2 assumed; ${mamfSource} (bf16 1745, fp8 3432.5)`,
  },
  /**
   * One Blackwell GPU of a GB200 superchip (NVIDIA GB200 NVL72 spec: 72 GPUs, 360 PF fp8 dense,
   * 1,440 PF fp4 sparse … 13.4 TB HBM3e, 576 TB/s): per GPU 10 PF fp4, 5 PF fp8 and 2.5 bf16 dense,
   * 186 GB, 8 TB/s; it clocks
   * higher than the HGX B200 (2.062 GHz device-reported max, ml-engineering). 148 SMs as B200.
   */
  'gb200-gpu': {
    name: 'gb200-gpu',
    label: 'GB200 (one Blackwell GPU) 186 GB',
    peakTflops: { fp32: 80, tf32: 1250, fp16: 2500, bf16: 2500, fp8: 5000, fp4: 10000 },
    mamf: { bf16: gb200Mamf, fp16: gb200Mamf, fp8: { tflops: 3615.6, shape: [19456, 5120, 1536] } },
    sustained: b200Sustained,
    hbmGBps: 8000,
    l2GBps: 2.3 * v100L2 * 2.0,
    sms: 148,
    memoryGiB: 186e9 / 2 ** 30,
    arch: 'blackwell',
    source: `NVIDIA GB200 NVL72 spec (per GPU: 10 PF fp4, 5 PF fp8, 2.5 PF bf16 dense, 186 GB, 8 TB/s); 148 SMs; L2 assumed (×2.0 of A100 by SMs × clock); ${mamfSource} (bf16 1822, fp8 3615.6)`,
  },
} as const satisfies Record<string, GpuSpec>;

/** A catalog GPU's key. */
export type GpuName = keyof typeof gpus;

/** Every catalog GPU, in display order. */
export const gpuNames = Object.keys(gpus) as GpuName[];

/** A GEMM's operand format: the training dtype, or fp8 / fp4 where Transformer Engine's fp8 or NVFP4 recipe applies. */
export type GemmPrecision = TrainDtype | 'fp8' | 'fp4';

/** Dense peak FLOP/s of `gpu`'s tensor cores in `precision`; throws for GPUs without the format (fp8: V100, A100; fp4: all but Blackwell). */
export function gemmPeakFlops(gpu: GpuSpec, precision: GemmPrecision): number {
  if (precision === 'fp4') {
    const tf = gpu.peakTflops.fp4;
    if (tf === undefined) throw new Error(`${gpu.label} has no fp4 tensor cores: NVFP4 needs Blackwell (B200, GB200).`);
    return tf * 1e12;
  }
  if (precision !== 'fp8') return peakFlops(gpu, precision);
  const tf = gpu.peakTflops.fp8;
  if (tf === undefined)
    throw new Error(`${gpu.label} has no fp8 tensor cores: fp8 needs Hopper or Blackwell (H100, H200, B200, GB200).`);
  return tf * 1e12;
}

/**
 * Dense peak FLOP/s for GEMMs in `dtype`. fp32 GEMMs run on CUDA cores: PyTorch leaves TF32 off
 * for matmuls by default (torch.backends.cuda.matmul.allow_tf32 = False since 1.12). Throws for a
 * format the GPU has no tensor cores for (V100 and bf16).
 */
export function peakFlops(gpu: GpuSpec, dtype: TrainDtype): number {
  const tf = dtype === 'fp32' ? gpu.peakTflops.fp32 : gpu.peakTflops[dtype];
  if (tf === undefined) throw new Error(`${gpu.label} has no ${dtype} tensor cores: choose fp16 or fp32.`);
  return tf * 1e12;
}
