import type { Interconnect } from '../../hardware/interconnect.ts';
import { groupLink, type SystemSpec } from '../../hardware/systems.ts';
import type { Degrees } from '../../megatron/training-setup.ts';
import { tpGroupLink } from '../layer/projected-layer.ts';

/**
 * The links of a job's process groups under Megatron's default rank order "tp-cp-ep-dp-pp"
 * (megatron/core/parallel_state.py, core_v0.19.0; ep = 1 here): rank = tp_rank + t·(cp_rank +
 * cp·(dp_rank + DP·pp_rank)), so a group's members are `stride` ranks apart (TP 1, CP t, DP t·cp,
 * the DP × CP gradient group t, PP t·cp·DP) and a node of G GPUs holds min(size, ⌊G/stride⌋) of
 * them (at least 1). Each group then uses groupLink of that many per node.
 */
export interface GroupLinks {
  readonly tp: Interconnect;
  readonly cp: Interconnect;
  /** The gradient group: DP × CP ranks (Megatron reduces gradients over dp_cp). */
  readonly dpCp: Interconnect;
  /** A pipeline stage boundary: ranks t·cp·DP apart. */
  readonly pp: Interconnect;
  /** The first and last pipeline stage (tied embedding gradients): ranks t·cp·DP·(p − 1) apart. */
  readonly embedding: Interconnect;
}

/** Members of a group of `size` ranks `stride` apart that one node of `system` holds. */
export const membersPerNode = (system: SystemSpec, stride: number, size: number): number =>
  Math.max(1, Math.min(size, Math.floor(system.gpusPerNode / stride)));

/**
 * Members of the pairs {r, r + apart}, r < first, one node of G GPUs holds for every pair: 2 when
 * apart + min(first, G) ≤ G (the last r < first still lands on r's node), else 1. For apart a
 * power-of-two multiple of `first` it is membersPerNode(apart, 2); the tied-embedding pair of
 * p = 4 stages is not (t 2 on 8 GPUs: {0, 6} and {1, 7}, on one node, where ⌊8/6⌋ = 1).
 */
const pairPerNode = (system: SystemSpec, first: number, apart: number): number =>
  apart + Math.min(first, system.gpusPerNode) <= system.gpusPerNode ? 2 : 1;

/** Each group's link for the degrees `d` on `system`. */
export function groupLinks(system: SystemSpec, d: Degrees): GroupLinks {
  const { tp, cp, dp, pp } = d;
  const stage = tp * cp * dp;
  return {
    tp: tpGroupLink(system, tp),
    cp: groupLink(system, cp, membersPerNode(system, tp, cp)),
    dpCp: groupLink(system, dp * cp, membersPerNode(system, tp, dp * cp)),
    pp: groupLink(system, 2, membersPerNode(system, stage, 2)),
    embedding: groupLink(system, 2, pairPerNode(system, stage, stage * Math.max(1, pp - 1))),
  };
}

/**
 * One point-to-point send of `bytes` on `link` (µs): NCCL's per-call base latency, one ring step's
 * α and the bytes at the link's bandwidth (a send is one hop of the alpha-beta model).
 */
export const p2pUs = (system: SystemSpec, link: Interconnect, bytes: number): number =>
  system.collectiveBaseUs + link.alphaUs + bytes / (link.busGBps * 1e3);
