import type { CollectiveOp } from '../comm/collectives.ts';
import type { GpuSpec } from './gpus.ts';
import type { Interconnect } from './interconnect.ts';
import { kernelModel, type KernelModel } from './kernel-time.ts';

/**
 * Overlap is not free (seed 004 M101/M102, docs/sources.md): a collective that runs while a kernel
 * computes takes SMs (each NCCL channel or userbuffers communicator is one CTA resident on one SM) and
 * HBM bandwidth (it reads what it sends and writes what it receives), so the kernel under it slows:
 *   compute-bound kernel: × SMs / (SMs − comm SMs)              (the tiles run on fewer SMs)
 *   memory-bound kernel:  × ρ·HBM / (ρ·HBM − comm HBM traffic)  (bandwidth shared)
 * for as long as the collective runs. A kernel of t µs under a collective of C µs, slowed by f
 * while they overlap:
 *   t' = f·t                 when f·t ≤ C (all of it under the collective)
 *   t' = t + C·(1 − 1/f)     otherwise   (C µs at 1/f speed, the rest at full speed)
 */
export interface CommFootprint {
  /** SMs the collective's kernels occupy. */
  readonly sms: number;
  /** HBM bandwidth its data movement takes, GB/s. */
  readonly hbmGBps: number;
}

/**
 * SMs a communicator takes:
 *   NCCL: one CTA per channel. NCCL's topology search settles on 16 or more channels on an
 *   NVSwitch node (NCCL's MAXCHANNELS is 32; NCCL_MIN_NCHANNELS/NCCL_MAX_NCHANNELS bound it);
 *   16 assumed for NVLink; a link may say otherwise (Interconnect.ncclChannels: 2 for the PCIe
 *   box, whose rings through a PCIe switch rarely get more; a ring across nodes the count NCCL's
 *   search and duplication give its ranks per node, nccl-ring-channels.ts).
 *   Userbuffers (Transformer Engine's comm+GEMM overlap, transformer_engine/pytorch/module/base.py
 *   `initialize_ub` defaults): ring_exchange (the all-gathers before qkv/fc1 fprop and the dgrads
 *   of proj/fc2) num_sm 1 with copy engines; pipeline (the reduce-scatters after proj/fc2 fprop)
 *   and bulk (qkv/fc1 dgrad and wgrad) num_sm 16.
 */
export const commSms = { ncclNvlink: 16, ubRingExchange: 1, ubPipeline: 16, ubBulk: 16 } as const;

/**
 * HBM traffic per byte of bus bandwidth: a ring step of a reduce (all-reduce, reduce-scatter)
 * reads the local chunk and the received one and writes the sum (3×); an all-gather or a p2p
 * exchange writes what it receives and reads what it forwards (2×).
 */
export const hbmTrafficPerBusByte = (op: CollectiveOp): number =>
  op === 'allReduce' || op === 'reduceScatter' ? 3 : 2;

/** The footprint of a collective `op` moving at `busGBps` with `sms` SMs. */
export const commFootprint = (op: CollectiveOp, busGBps: number, sms: number): CommFootprint => ({
  sms,
  hbmGBps: hbmTrafficPerBusByte(op) * busGBps,
});

/** NCCL's footprint for collective `op` on `link`: its channels' SMs and its HBM traffic. */
export const ncclFootprint = (op: CollectiveOp, link: Interconnect): CommFootprint =>
  commFootprint(op, link.busGBps, link.ncclChannels ?? commSms.ncclNvlink);

/**
 * Channels of one NCCL send/recv pair (the pipeline's p2p): NCCL_NCHANNELS_PER_NET_PEER, default 2
 * (NCCL's environment-variable documentation); assumed for every link, NVLink included.
 */
export const ncclP2pChannels = 2;

/**
 * The footprint of a pipeline stage's p2p while it computes: a send and a receive at `busGBps`
 * each way (reads what it sends, writes what it receives: 2× in HBM), on ncclP2pChannels SMs.
 */
export const p2pFootprint = (busGBps: number): CommFootprint => ({ sms: ncclP2pChannels, hbmGBps: 2 * busGBps });

/**
 * Compute time a kernel stream loses while a collective of `commMs` runs beside it at slowdown f:
 * C·(1 − 1/f) (overlappedKernelUs with the kernel longer than the collective).
 */
export const overlapLossMs = (commMs: number, f: number): number => commMs * (1 - 1 / f);

/** f: the slowdown of a kernel while `comm` runs beside it (formula above); ≥ 1. */
export function overlapSlowdown(
  memoryBound: boolean,
  gpu: GpuSpec,
  comm: CommFootprint,
  m: KernelModel = kernelModel,
): number {
  if (memoryBound) {
    const hbm = m.hbmEfficiency * gpu.hbmGBps;
    return hbm / Math.max(hbm - comm.hbmGBps, 0.05 * hbm);
  }
  return gpu.sms / Math.max(gpu.sms - comm.sms, 1);
}

/** t': a kernel of `us` µs slowed by `f` while a collective of `commUs` µs runs beside it. */
export function overlappedKernelUs(us: number, commUs: number, f: number): number {
  return f * us <= commUs ? f * us : us + commUs * (1 - 1 / f);
}
