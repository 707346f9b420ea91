// Rates measured on the user's own cluster (src/calibrate/ fits them from nccl-tests and a GEMM
// sweep); a system that carries them prices its collectives and GEMMs with them in place of the
// catalog's assumptions.
import type { CollectiveOp } from '../comm/collectives.ts';
import type { GemmPrecision, GpuSpec } from './gpus.ts';
import { gemmPeakFlops } from './gpus.ts';
import { gemmTime, kernelModel, type GemmShape, type GemmTime } from './kernel-time.ts';
import { clockFactor, type KernelClock } from './sustained-clock.ts';

/** A collective nccl-tests measures, in the model's words (sendRecv: one hop, allToAll: not a ring op of the model). */
export type MeasuredCollectiveOp = 'allReduce' | 'allGather' | 'reduceScatter' | 'broadcast' | 'sendRecv' | 'allToAll';

/**
 * α and B of the ring model (interconnect.ts) fitted to one nccl-tests run of `op` on `ranks` ranks:
 * T(S) = base + steps·α + S·f/B, with steps and f the model's for the op (all-reduce 2(t−1) and
 * 2(t−1)/t; all-gather, reduce-scatter, all-to-all t−1 and (t−1)/t; broadcast t−1 and 1;
 * send/recv 1 and 1), base the system's NCCL base latency.
 */
export interface FittedCollective {
  readonly op: MeasuredCollectiveOp;
  readonly ranks: number;
  /** Ranks per node in the measured run (= ranks inside a node). */
  readonly ranksPerNode: number;
  readonly alphaUs: number;
  readonly busGBps: number;
  /** Rows the fit used and its largest |model − measured|/measured over them. */
  readonly points: number;
  readonly maxRelError: number;
  readonly source: string;
}

/** The classes a step's compute kernels are priced in: GEMMs (by FLOPs), FlashAttention, memory-bound kernels (by bytes). */
export type KernelClass = 'gemm' | 'attention' | 'memory';

/**
 * Measured / modelled kernel time per class, from one job's trace (projection/studies/trace-what-if.ts):
 * every kernel of the class is priced at the model's time × the factor, so a class keeps the
 * model's dependence on shape (GEMM tiles, FLOPs, bytes) at the level the trace measured.
 */
export type KernelScale = Readonly<Record<KernelClass, number>>;

/** `us` of a kernel of `cls` on a system that may carry a trace's kernel scale. */
export function scaledKernelUs(system: { readonly kernelScale?: KernelScale }, cls: KernelClass, us: number): number {
  return system.kernelScale ? us * system.kernelScale[cls] : us;
}

/** One GEMM timed on the cluster: [M,K]·[K,N] × batch in `precision`, µs per call (the launch included). */
export interface MeasuredGemm extends GemmShape {
  readonly precision: GemmPrecision;
  readonly us: number;
}

/** The model's op a fitted nccl-tests op stands for. */
const modelOp: Partial<Record<CollectiveOp, MeasuredCollectiveOp>> = {
  allReduce: 'allReduce',
  allGather: 'allGather',
  reduceScatter: 'reduceScatter',
  broadcast: 'broadcast',
  ringExchange: 'sendRecv',
};

/**
 * The fit that prices `op` on a group of `t`: the same collective, the measured group size
 * closest to t in log₂ (the larger on a tie); undefined when none was measured. The ring
 * model's dependence on t is kept: the fit gives α and B, the formula gives the rest.
 */
export function fittedFor(
  fits: readonly FittedCollective[] | undefined,
  op: CollectiveOp,
  t: number,
): FittedCollective | undefined {
  const want = modelOp[op];
  let best: FittedCollective | undefined;
  for (const f of fits ?? []) {
    if (f.op !== want) continue;
    const d = Math.abs(Math.log2(f.ranks / t));
    const bd = best ? Math.abs(Math.log2(best.ranks / t)) : Infinity;
    if (d < bd || (d === bd && best && f.ranks > best.ranks)) best = f;
  }
  return best;
}

/** The measured time of exactly this GEMM (M, N, K, batch, precision), or undefined. */
export function measuredGemmUs(
  table: readonly MeasuredGemm[] | undefined,
  g: GemmShape,
  precision: GemmPrecision,
): number | undefined {
  return table?.find(
    (m) => m.M === g.M && m.N === g.N && m.K === g.K && m.batch === g.batch && m.precision === precision,
  )?.us;
}

/**
 * A GEMM's time on a system that may carry measured GEMMs, at `clock` (sustained-clock.ts): the
 * measurement where this exact shape and precision was timed, else the tile model of kernel-time.ts.
 * The sweep times each GEMM alone on an otherwise idle GPU, at the burst clock the model's anchors
 * ran at, so a step's sustained clock stretches it the way it stretches the model:
 * (measured − launch)/r + launch, r = clockFactor, unless the model finds the shape HBM-bound (the
 * memory clock does not throttle). Its efficiency is against the precision's dense peak.
 */
export function gemmTimeOn(
  system: { readonly gpu: GpuSpec; readonly measuredGemms?: readonly MeasuredGemm[] },
  g: GemmShape,
  precision: GemmPrecision,
  clock: KernelClock = 'burst',
): GemmTime {
  const model = gemmTime(g, system.gpu, precision, kernelModel, clock);
  const measured = measuredGemmUs(system.measuredGemms, g, precision);
  if (measured === undefined) return model;
  const r = model.memoryBound ? 1 : clockFactor(system.gpu, clock);
  const us = (measured - kernelModel.launchUs) / r + kernelModel.launchUs;
  const efficiency = (2 * g.M * g.N * g.K * g.batch) / (us * 1e-6 * gemmPeakFlops(system.gpu, precision));
  return { ...model, us, efficiency };
}
