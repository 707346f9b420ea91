import type { TrainDtype } from './dtype.ts';

/**
 * One GPU model as the projection sees it. Peaks are dense (no 2:4 sparsity), in TFLOP/s;
 * memory is the HBM capacity in GiB (HBM stacks come in binary sizes: "32 GB" V100 = 32 GiB).
 */
export interface GpuSpec {
  readonly name: string;
  readonly label: string;
  /** Dense peak per format: fp32 on CUDA cores; tf32/fp16/bf16 on tensor cores (absent: not supported). */
  readonly peakTflops: { readonly fp32: number; readonly tf32?: number; readonly fp16: number; readonly bf16?: number };
  /** HBM bandwidth, GB/s (1e9 B/s). */
  readonly hbmGBps: number;
  /** L2 bandwidth, GB/s: what feeds a GEMM tile's operands (see kernel-time.ts). */
  readonly l2GBps: number;
  readonly sms: number;
  readonly memoryGiB: number;
  readonly source: string;
}

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
    hbmGBps: 2039,
    l2GBps: 2.3 * v100L2,
    sms: 108,
    memoryGiB: 80,
    source:
      'NVIDIA A100 datasheet (80 GB SXM: 19.5 fp32, 156 tf32, 312 fp16/bf16 dense, 2039 GB/s); 108 SMs and L2 2.3× V100 (A100 whitepaper)',
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
    peakTflops: { fp32: 67, tf32: 494.5, fp16: 989.5, bf16: 989.5 },
    hbmGBps: 3350,
    l2GBps: 2.3 * v100L2 * 1.72,
    sms: 132,
    memoryGiB: 80,
    source:
      'NVIDIA H100 datasheet (SXM: 67 fp32; 989/1979 tf32/fp16 with sparsity → 494.5/989.5 dense; 3.35 TB/s); 132 SMs (H100 whitepaper); L2 assumed',
  },
} as const satisfies Record<string, GpuSpec>;

/** A catalog GPU's key. */
export type GpuName = keyof typeof gpus;

/** Every catalog GPU, in display order. */
export const gpuNames = Object.keys(gpus) as GpuName[];

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
