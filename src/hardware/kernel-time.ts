import type { TrainDtype } from './dtype.ts';
import { dtypeBytes } from './dtype.ts';
import { peakFlops, type GpuSpec } from './gpus.ts';

/**
 * Kernel time on a datacenter GPU, from the shape alone.
 *
 * GEMM [M,K]·[K,N] (× batch), after NVIDIA's "Matrix Multiplication Background" user's guide
 * (Deep Learning Performance documentation, DU-09799-001): cuBLAS computes C in tiles of
 * tm × tn (256×128 … 64×64), one tile per SM at a time, so
 *   tiles = ⌈M/tm⌉·⌈N/tn⌉·batch                       (tile quantization: a partial tile costs a full one)
 *   waves = ⌈tiles / SMs⌉                              (wave quantization: a partial wave costs a full one)
 *   tile time = max(2·tm·tn·K / (η·peak/SMs),          (the SM's share of the achievable peak)
 *                   (tm + tn)·K·bytes / (L2 BW/SMs))   (its operands streamed from L2: small tiles reuse less)
 *   compute = waves · tile time, minimised over the tile sizes (cuBLAS's heuristics pick a tile)
 *   time = max(compute, (MK + KN + MN)·batch·bytes / (ρ·HBM BW)) + launch
 * Memory-bound kernels (norms, softmax over the materialized s×s scores, RoPE, SwiGLU, adds,
 * cross entropy, embedding): bytes moved / (ρ·HBM BW) + launch.
 */
export interface KernelModel {
  /** η: fraction of the dense peak a large GEMM reaches. */
  readonly gemmEfficiency: number;
  /** ρ: fraction of the datasheet HBM bandwidth a streaming kernel reaches. */
  readonly hbmEfficiency: number;
  /** Fixed cost of one kernel, µs. */
  readonly launchUs: number;
  /** Output tile sizes [tm, tn] the GEMM library chooses from. */
  readonly tiles: readonly (readonly [number, number])[];
}

/**
 * The constants. η = 0.8: cuBLAS reaches roughly 75–90% of the dense tensor-core peak on large
 * GEMMs in NVIDIA's own published curves (the guide above; A100 ≈ 250+ of 312 TFLOP/s) — an
 * assumption of this order, not a fit. ρ = 0.83: V100 measured 750 of 900 GB/s (Jia et al. 2018,
 * arXiv:1804.06826). launch 5 µs: the order of a CUDA kernel launch plus eager-framework
 * dispatch (assumed). Tiles: the ones the guide lists for cuBLAS (256×128 most efficient …
 * 64×64 least).
 */
export const kernelModel: KernelModel = {
  gemmEfficiency: 0.8,
  hbmEfficiency: 0.83,
  launchUs: 5,
  tiles: [
    [256, 128],
    [128, 256],
    [128, 128],
    [256, 64],
    [64, 256],
    [128, 64],
    [64, 128],
    [64, 64],
  ],
};

/** A GEMM's local problem: [M,K]·[K,N] per batch. */
export interface GemmShape {
  readonly M: number;
  readonly N: number;
  readonly K: number;
  readonly batch: number;
}

/** What the model says about one GEMM. */
export interface GemmTime {
  readonly us: number;
  readonly tile: readonly [number, number];
  readonly tiles: number;
  readonly waves: number;
  /** Whether HBM traffic, not the tiles, set the time. */
  readonly memoryBound: boolean;
  /** 2MNK·batch / (us · peak): the achieved fraction of the dense peak. */
  readonly efficiency: number;
}

/** Projected time of one GEMM on `gpu` in `dtype` (formula above). */
export function gemmTime(g: GemmShape, gpu: GpuSpec, dtype: TrainDtype, m: KernelModel = kernelModel): GemmTime {
  const bytes = dtypeBytes[dtype];
  const peak = peakFlops(gpu, dtype);
  const perSmFlops = (m.gemmEfficiency * peak) / gpu.sms;
  const perSmL2 = (gpu.l2GBps * 1e9) / gpu.sms;
  let best = { us: Infinity, tile: m.tiles[0]!, tiles: 0, waves: 0 };
  for (const tile of m.tiles) {
    const [tm, tn] = tile;
    const tiles = Math.ceil(g.M / tm) * Math.ceil(g.N / tn) * g.batch;
    const waves = Math.ceil(tiles / gpu.sms);
    const tileS = Math.max((2 * tm * tn * g.K) / perSmFlops, ((tm + tn) * g.K * bytes) / perSmL2);
    const us = waves * tileS * 1e6;
    if (us < best.us) best = { us, tile, tiles, waves };
  }
  const memUs = hbmUs((g.M * g.K + g.K * g.N + g.M * g.N) * g.batch * bytes, gpu, m);
  const us = Math.max(best.us, memUs) + m.launchUs;
  return {
    us,
    tile: best.tile,
    tiles: best.tiles,
    waves: best.waves,
    memoryBound: memUs > best.us,
    efficiency: (2 * g.M * g.N * g.K * g.batch) / (us * 1e-6 * peak),
  };
}

/** µs to stream `bytes` through HBM at ρ of the datasheet bandwidth. */
export function hbmUs(bytes: number, gpu: GpuSpec, m: KernelModel = kernelModel): number {
  return (bytes / (m.hbmEfficiency * gpu.hbmGBps * 1e9)) * 1e6;
}

/** Projected time of a memory-bound kernel that moves `bytes` (reads + writes): bytes / (ρ·HBM) + launch. */
export function memoryBoundUs(bytes: number, gpu: GpuSpec, m: KernelModel = kernelModel): number {
  return hbmUs(bytes, gpu, m) + m.launchUs;
}
