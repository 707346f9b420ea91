import { dtypeBytes } from './dtype.ts';
import { gemmPeakFlops, type GemmPrecision, type GpuArch, type GpuSpec } from './gpus.ts';
import { clockFactor, type KernelClock } from './sustained-clock.ts';

/**
 * Kernel time on a datacenter GPU, from the shape alone.
 *
 * GEMM [M,K]·[K,N] (× batch), after NVIDIA's "Matrix Multiplication Background" user's guide
 * (Deep Learning Performance documentation, DU-09799-001): cuBLAS computes C in tiles of
 * tm × tn (256×128 … 64×64), one tile per SM at a time, so
 *   tiles = ⌈M/tm⌉·⌈N/tn⌉·batch                       (tile quantization: a partial tile costs a full one)
 *   waves = ⌈tiles / SMs⌉                              (wave quantization: a partial wave costs a full one)
 *   tile time = max(2·tm·tn·K / (η·peak/SMs),          (the SM's share of the achievable peak)
 *                   (tm + tn/c)·K·bytes / (L2 BW/SMs)) (its operands streamed from L2: small tiles reuse less;
 *                                                       c = CTAs of a cluster sharing B by TMA multicast)
 *   compute = waves · tile time, minimised over the tile sizes (cuBLAS's heuristics pick a tile)
 *             and over split-K ∈ {1, 2, 4} (K in slices of ≥ 1024 as extra tiles, which fills
 *             partial waves, plus 2·split·M·N·4 B of fp32 partials through HBM; CUTLASS documents
 *             split-K and stream-K for exactly this)
 *   time = max(compute, (MK + KN + MN)·batch·bytes / (ρ·HBM BW)) + launch
 * η, the main loop's fraction of the dense peak, is per GPU and format, from a micro-level
 * measurement: the maximum achievable matmul FLOP/s over the datasheet peak (gpus.ts `mamf`:
 * A100 bf16 0.869, H100 0.803, B200 0.776, H100 fp8 0.709). A GEMM whose shape quantizes
 * perfectly reaches the best a real GEMM reached; every other shape falls below through the
 * tiles, the waves, the L2 operand stream, the HBM floor and the launch. At the measured best
 * shapes themselves the model gives 0.80–0.99 of the measurement (docs/projection-kernels.md).
 * Where no measurement is published (V100, fp32 on CUDA cores) η is the assumed 0.8.
 * No shape beats its anchor: compute ≥ 2MNK·batch / (η·peak) (η_main > η with the epilogue taken
 * out, so a long K that amortizes the epilogue better than the anchor's shape would otherwise
 * exceed the measured best: B200 fp8 8192³ came out at 84% of peak against the measured 76%).
 * In a training step (`clock` sustained) the main loop and the L2 stream run at the clock the
 * power cap sustains (sustained-clock.ts: × MSMF/MAMF), the anchor likewise.
 * Memory-bound kernels (norms, softmax over the materialized s×s scores, RoPE, SwiGLU, adds,
 * cross entropy, embedding): bytes moved / (ρ·HBM BW) + launch.
 * `launch` is the device side of one kernel: the gap between back-to-back kernels of one stream.
 * The host's cost of issuing it (eager PyTorch) is host-dispatch.ts's.
 */
export interface KernelModel {
  /** η where no measurement is published: fraction of the dense peak a large GEMM reaches. */
  readonly gemmEfficiency: number;
  /** ρ: fraction of the datasheet HBM bandwidth a streaming kernel reaches. */
  readonly hbmEfficiency: number;
  /** Device-side cost of one kernel, µs: the launch gap between back-to-back kernels of a stream. */
  readonly launchUs: number;
  /** Output tile sizes [tm, tn] the GEMM library chooses from. */
  readonly tiles: readonly (readonly [number, number])[];
  /** Split-K factors the library may use: K cut into `split` slices run as separate tiles, partials summed. */
  readonly splitK: readonly number[];
  /** Smallest K slice a split may leave. */
  readonly minSplitK: number;
  /** c: CTAs of a thread-block cluster that share one B tile by TMA multicast, per GPU generation. */
  readonly clusterMulticast: Readonly<Record<GpuArch, number>>;
}

/**
 * The constants. η = 0.8 where no MAMF figure exists: cuBLAS reaches roughly 75–90% of the
 * dense tensor-core peak on large GEMMs (the measured 77.6–86.9% of gpus.ts) — an assumption of
 * that order, not a fit. ρ = 0.83: V100 measured 750 of 900 GB/s (Jia et al. 2018,
 * arXiv:1804.06826). launch 0.9 µs: NVIDIA's "Getting Started with CUDA Graphs" (A. Gray, NVIDIA
 * Technical Blog, 2019) times a 2.9 µs kernel at 3.8 µs per kernel when launched back to back on
 * one stream, so 0.9 µs of device-side gap per kernel (3.4 µs in a graph: graphs save the rest,
 * modelled in host-dispatch.ts). Tiles: the ones the guide lists for cuBLAS (256×128 most
 * efficient … 64×64 least). Cluster multicast: Hopper introduced thread-block clusters whose
 * CTAs receive one TMA load together (H100 whitepaper, "Thread Block Clusters", "TMA"); CUTLASS 3's
 * Hopper and Blackwell GEMMs run clusters of 2 CTAs or more (c = 2 taken: the smallest); Volta and
 * Ampere have none (c = 1). Split-K: slices of at least 1024 (a few main-loop stages per tile),
 * factors 1, 2, 4 — an assumption of the library's choices, not a measurement.
 */
export const kernelModel: KernelModel = {
  gemmEfficiency: 0.8,
  hbmEfficiency: 0.83,
  launchUs: 0.9,
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
  splitK: [1, 2, 4],
  minSplitK: 1024,
  clusterMulticast: { volta: 1, ampere: 1, hopper: 2, blackwell: 2 },
};

/** A GEMM's local problem: [M,K]·[K,N] per batch. */
export interface GemmShape {
  readonly M: number;
  readonly N: number;
  readonly K: number;
  readonly batch: number;
  /**
   * C is accumulated into (β = 1) in a format of this many bytes: each C element read and written
   * (a weight gradient added to Megatron's main_grad by the wgrad GEMM itself). Absent: C written
   * once, in the operands' format (bf16 under fp8).
   */
  readonly accumulateBytes?: number;
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

/**
 * η of `gpu` in `precision`: the measured maximum achievable matmul FLOP/s over the dense peak
 * where gpus.ts has a MAMF figure (A100 bf16 0.869, H100 0.803, B200 0.776, H100 fp8 0.709);
 * else the model's assumed `gemmEfficiency` (V100; fp32 on CUDA cores).
 */
export function gemmEfficiencyOf(gpu: GpuSpec, precision: GemmPrecision, m: KernelModel = kernelModel): number {
  const mamf = precision === 'fp32' ? undefined : gpu.mamf?.[precision];
  return mamf === undefined ? m.gemmEfficiency : (mamf.tflops * 1e12) / gemmPeakFlops(gpu, precision);
}

/** η_main per GPU and precision (computed once: a bisection over the MAMF shape). */
const mainLoopMemo = new WeakMap<GpuSpec, Map<GemmPrecision, number>>();

/**
 * η_main, the main loop's fraction of the dense peak: η with the epilogue taken out. A MAMF figure
 * is a whole GEMM's rate, its tiles' epilogues included, so η_main is the rate at which the model
 * with epilogues gives the measured best shape exactly the time the model without them gives it at
 * η (bisection; the time falls as η_main rises). Without a MAMF figure η is taken as the main
 * loop's already (the assumed 0.8).
 */
export function mainLoopEfficiency(gpu: GpuSpec, precision: GemmPrecision, m: KernelModel = kernelModel): number {
  const eta = gemmEfficiencyOf(gpu, precision, m);
  const mamf = precision === 'fp32' ? undefined : gpu.mamf?.[precision];
  if (!mamf) return eta;
  let byPrecision = m === kernelModel ? mainLoopMemo.get(gpu) : undefined;
  const hit = byPrecision?.get(precision);
  if (hit !== undefined) return hit;
  const [M, N, K] = mamf.shape;
  const shape = { M, N, K, batch: 1 };
  const target = tiledGemm(shape, gpu, precision, eta, false, m).us;
  let lo = eta;
  let hi = 2 * eta;
  for (let i = 0; i < 50; i++) {
    const mid = (lo + hi) / 2;
    if (tiledGemm(shape, gpu, precision, mid, true, m).us > target) lo = mid;
    else hi = mid;
  }
  const value = (lo + hi) / 2;
  if (m === kernelModel) {
    if (!byPrecision) mainLoopMemo.set(gpu, (byPrecision = new Map()));
    byPrecision.set(precision, value);
  }
  return value;
}

/** Bytes per operand element in `precision` (fp8: 1, fp4: ½; their block scales are the cast's, low-precision.ts). */
export const precisionBytes = (precision: GemmPrecision): number =>
  precision === 'fp8' ? 1 : precision === 'fp4' ? 0.5 : dtypeBytes[precision];

/**
 * Projected time of one GEMM on `gpu` with operands in `precision` (formula above), at the boost
 * clock of an isolated measurement or at a training step's sustained clock; `efficiency` in the
 * answer is against that precision's dense peak, and never above the anchor η (× the clock's factor).
 */
export function gemmTime(
  g: GemmShape,
  gpu: GpuSpec,
  precision: GemmPrecision,
  m: KernelModel = kernelModel,
  clock: KernelClock = 'burst',
): GemmTime {
  const r = clockFactor(gpu, clock);
  const t = tiledGemm(g, gpu, precision, mainLoopEfficiency(gpu, precision, m), true, m, r);
  const flops = 2 * g.M * g.N * g.K * g.batch;
  const anchorUs = (flops / (r * gemmEfficiencyOf(gpu, precision, m) * gemmPeakFlops(gpu, precision))) * 1e6;
  const us = Math.max(t.us, anchorUs) + m.launchUs;
  return {
    us,
    tile: t.tile,
    tiles: t.tiles,
    waves: t.waves,
    memoryBound: t.memoryBound,
    efficiency: flops / (us * 1e-6 * gemmPeakFlops(gpu, precision)),
  };
}

/**
 * The tiled GEMM's device time without the launch, at main-loop efficiency `eta`, with or without
 * epilogues, the SMs' clock at `clock` × the anchor's (main loop and L2 stream; HBM unchanged).
 */
function tiledGemm(
  g: GemmShape,
  gpu: GpuSpec,
  precision: GemmPrecision,
  eta: number,
  epilogue: boolean,
  m: KernelModel,
  clock = 1,
): { us: number; tile: readonly [number, number]; tiles: number; waves: number; memoryBound: boolean } {
  const bytes = precisionBytes(precision);
  const perSmFlops = (clock * eta * gemmPeakFlops(gpu, precision)) / gpu.sms;
  const perSmL2 = (clock * l2GBpsOf(gpu, m) * 1e9) / gpu.sms;
  const perSmHbm = (m.hbmEfficiency * gpu.hbmGBps * 1e9) / gpu.sms;
  // fp8 and fp4 GEMMs read low-precision operands and write C in bf16 (Transformer Engine's GEMM
  // output); an accumulating GEMM reads and writes C in its accumulation format.
  const outBytes =
    g.accumulateBytes !== undefined ? 2 * g.accumulateBytes : precision === 'fp8' || precision === 'fp4' ? 2 : bytes;
  const c = m.clusterMulticast[gpu.arch];
  let best = { us: Infinity, tile: m.tiles[0]!, tiles: 0, waves: 0 };
  for (const tile of m.tiles)
    for (const split of m.splitK) {
      const k = Math.ceil(g.K / split);
      if (split > 1 && k < m.minSplitK) continue;
      const [tm, tn] = tile;
      const tiles = Math.ceil(g.M / tm) * Math.ceil(g.N / tn) * g.batch * split;
      const waves = Math.ceil(tiles / gpu.sms);
      // Epilogue: after its main loop the tile's C (fp32 partials under split-K) leaves through
      // the SM's share of HBM.
      const epilogueS = epilogue ? (Math.min(tm, g.M) * Math.min(tn, g.N) * (split > 1 ? 4 : outBytes)) / perSmHbm : 0;
      const tileS = Math.max((2 * tm * tn * k) / perSmFlops, ((tm + tn / c) * k * bytes) / perSmL2) + epilogueS;
      // Split-K: the `split` fp32 partial products are written and read back once to be summed
      // (an accumulating GEMM's C read and written once more there).
      const accumulate = g.accumulateBytes !== undefined ? 2 * g.accumulateBytes : 0;
      const reduceUs = split > 1 ? hbmUs((2 * split * 4 + accumulate) * g.M * g.N * g.batch, gpu, m) : 0;
      const us = waves * tileS * 1e6 + reduceUs;
      if (us < best.us) best = { us, tile, tiles, waves };
    }
  const memUs = hbmUs(((g.M * g.K + g.K * g.N) * bytes + g.M * g.N * outBytes) * g.batch, gpu, m);
  return { ...best, us: Math.max(best.us, memUs), memoryBound: memUs > best.us };
}

/**
 * The L2 bandwidth (GB/s) the model feeds tiles from: gpus.ts's figure, raised where a published
 * MAMF measurement needs more — the largest tile (tm × tn, c-way multicast) at the measured rate
 * R streams R·(tm + tn/c)·bytes / (2·tm·tn) B/s, so an assumed figure below that contradicts the
 * measurement. (H100's and Blackwell's L2 bandwidths are not published; gpus.ts extrapolates from
 * A100 by SMs × clock, which ignores Blackwell's doubled tensor-core rate per SM.)
 */
export function l2GBpsOf(gpu: GpuSpec, m: KernelModel = kernelModel): number {
  const [tm, tn] = m.tiles[0]!;
  const c = m.clusterMulticast[gpu.arch];
  let need = 0;
  for (const p of ['bf16', 'fp16', 'fp8'] as const) {
    const mamf = gpu.mamf?.[p];
    if (mamf) need = Math.max(need, (mamf.tflops * 1e3 * (tm + tn / c) * precisionBytes(p)) / (2 * tm * tn));
  }
  return Math.max(gpu.l2GBps, need);
}

/** µs to stream `bytes` through HBM at ρ of the datasheet bandwidth. */
export function hbmUs(bytes: number, gpu: GpuSpec, m: KernelModel = kernelModel): number {
  return (bytes / (m.hbmEfficiency * gpu.hbmGBps * 1e9)) * 1e6;
}

/** Projected time of a memory-bound kernel that moves `bytes` (reads + writes): bytes / (ρ·HBM) + launch. */
export function memoryBoundUs(bytes: number, gpu: GpuSpec, m: KernelModel = kernelModel): number {
  return hbmUs(bytes, gpu, m) + m.launchUs;
}
