import { collectiveTimeUs, type Interconnect } from '../../hardware/interconnect.ts';
import { groupLink, type SystemSpec } from '../../hardware/systems.ts';
import type { TokenDispatcher } from '../../megatron/moe.ts';
import { membersPerNode } from './group-links.ts';

/**
 * The expert mesh's links (parallel_state.py:886-897, order tp-cp-ep-dp-pp with cp = 1): an EP
 * group's members are ETP ranks apart, ETP's are adjacent, the tp_ep group (ETP × EP, what the
 * allgather and flex dispatchers gather over) is ETP·EP adjacent ranks. A node of G GPUs holds
 * `perNode` of a group's members.
 */
export interface ExpertLinks {
  readonly ep: number;
  readonly etp: number;
  /** EP members on one node. */
  readonly epPerNode: number;
  /** NVLink (or the node's GPU link) inside a node. */
  readonly intra: Interconnect;
  /**
   * One GPU's share of the node's NICs: every GPU of the node runs its own EP group's exchange at
   * the same layer, so the node's NICs carry all of them at once (rail-optimized fabric, PXN
   * through NVLink to the rail's NIC): min(1, NICs/G) · NIC rate.
   */
  readonly interGBps: number;
  readonly interAlphaUs: number;
  /** ETP's group (all-gather / reduce-scatter of the routed tokens). */
  readonly etpLink: Interconnect;
  /** The tp_ep group of ETP·EP ranks. */
  readonly tpEpLink: Interconnect;
  readonly tpEpPerNode: number;
}

/** The expert mesh's links of EP and ETP on `system`. */
export function expertLinks(system: SystemSpec, ep: number, etp: number): ExpertLinks {
  const epPerNode = membersPerNode(system, etp, ep);
  const tpEpPerNode = membersPerNode(system, 1, etp * ep);
  return {
    ep,
    etp,
    epPerNode,
    intra: system.intra,
    interGBps: Math.min(1, system.inter.nicsPerNode / system.gpusPerNode) * system.inter.nicGBps,
    interAlphaUs: system.inter.alphaUs,
    etpLink: groupLink(system, etp, membersPerNode(system, 1, etp)),
    tpEpLink: groupLink(system, etp * ep, tpEpPerNode),
    tpEpPerNode,
  };
}

/**
 * One all-to-all of `bytes` per rank (its whole send buffer, uniform over n ranks) among n ranks
 * of which g share a node (NCCL's all_to_all: one send and one receive per peer, all at once;
 * nccl-tests doc/PERFORMANCE.md prices it as algBW·(n − 1)/n): bytes·(g − 1)/n to the peers on
 * the node over the node's link and bytes·(n − g)/n across nodes on the GPU's NIC share, both
 * at once, plus one call's base latency and one hop's α. µs; 0 for n = 1.
 */
export function allToAllUs(
  system: SystemSpec,
  n: number,
  g: number,
  bytes: number,
  intra: Interconnect,
  interGBps: number,
  interAlphaUs: number,
): number {
  if (n <= 1) return 0;
  const local = Math.min(g, n);
  const intraUs = (bytes * (local - 1)) / n / (intra.busGBps * 1e3);
  const interUs = local < n ? (bytes * (n - local)) / n / (interGBps * 1e3) : 0;
  const alpha = local < n ? interAlphaUs : intra.alphaUs;
  return system.collectiveBaseUs + alpha + Math.max(intraUs, interUs);
}

/**
 * DeepEP's measured bottleneck bandwidth over the link's rate (deepseek-ai/DeepEP README, normal
 * kernels on H800 with ~160 GB/s NVLink and CX7 400 Gb/s ≈ 50 GB/s RDMA, DeepSeek-V3's
 * pre-training shapes): intranode EP 8 dispatch 153 GB/s (0.956); internode EP 16 dispatch and
 * combine 43 GB/s (0.86, the lowest of its EP 16–64 rows).
 */
export const deepEpEfficiency = { intra: 153 / 160, inter: 43 / 50 } as const;

/**
 * Distinct nodes other than its own a token reaches when its k copies go uniformly to the
 * experts of n ranks over ⌈n/g⌉ nodes: (nodes − 1)·(1 − (1 − 1/nodes)^k). DeepEP sends a token
 * once per destination node over RDMA and forwards it inside the node over NVLink (DeepSeek-V3,
 * arXiv:2412.19437 §3.2.2), so this, not k, multiplies the inter-node bytes.
 */
export function remoteNodesPerToken(n: number, g: number, k: number): number {
  const nodes = Math.ceil(n / Math.max(1, Math.min(g, n)));
  if (nodes <= 1) return 0;
  return (nodes - 1) * (1 - (1 - 1 / nodes) ** k);
}

/** The token exchange of one MoE layer's dispatch (or its combine), one direction, µs per rank. */
export interface DispatchComm {
  /** The EP exchange (all-to-all, DeepEP's dispatch, or the tp_ep all-gather / reduce-scatter). */
  readonly exchangeUs: number;
  /** The ETP all-gather (dispatch) or reduce-scatter (combine) of the routed tokens (alltoall only). */
  readonly etpUs: number;
}

/** What one rank sends in a MoE layer: its tokens and their routed copies. */
export interface DispatchVolume {
  /** T: tokens on the rank (s·b/(t·cp) with SP). */
  readonly tokens: number;
  readonly hidden: number;
  readonly experts: number;
  readonly topk: number;
  /** Bytes per activation element. */
  readonly bytes: number;
  /** Routed rows this rank sends over the EP exchange: T·k, capped by capacity (dispatch volume). */
  readonly routedRows: number;
  /** The busiest rank's received rows over the mean (load imbalance, capped by capacity). */
  readonly imbalance: number;
}

/**
 * One direction of a MoE layer's token exchange, per rank (token_dispatcher.py, core_v0.19.0):
 * - alltoall (MoEAlltoAllTokenDispatcher): the permuted rows (routedRows·h) in one all-to-all
 *   over EP (:698, probs beside them, [rows] fp32), then an all-gather over ETP of the received
 *   rows (:739); the combine mirrors it (reduce-scatter over ETP :822, all-to-all :857). The
 *   busiest rank receives `imbalance` × the mean.
 * - allgather (MoEAllGatherTokenDispatcher): all-gather of the hidden states [T, h], the probs
 *   and the routing map ([T, E] fp32 and bool) over tp_ep (:287-297), reduce-scatter back (:362).
 * - flex (DeepEP, MoEFlexTokenDispatcher over tp_ep with k·ETP copies, :1770-1790): each token
 *   once per destination node over RDMA and once per destination rank inside the node, at
 *   DeepEP's measured share of the links (deepEpEfficiency), no NCCL call.
 */
export function dispatchComm(
  system: SystemSpec,
  links: ExpertLinks,
  dispatcher: TokenDispatcher,
  v: DispatchVolume,
): DispatchComm {
  const row = v.hidden * v.bytes;
  const { ep, etp } = links;
  if (dispatcher === 'allgather') {
    const n = etp * ep;
    const perRank = v.tokens * (row + v.experts * 5);
    return {
      exchangeUs: n > 1 ? system.collectiveBaseUs + collectiveTimeUs('allGather', perRank * n, n, links.tpEpLink) : 0,
      etpUs: 0,
    };
  }
  if (dispatcher === 'alltoall') {
    const sent = v.routedRows * (row + 4) * v.imbalance;
    const exchangeUs = allToAllUs(system, ep, links.epPerNode, sent, links.intra, links.interGBps, links.interAlphaUs);
    const gathered = v.routedRows * v.imbalance * etp * row;
    const etpUs = etp > 1 ? system.collectiveBaseUs + collectiveTimeUs('allGather', gathered, etp, links.etpLink) : 0;
    return { exchangeUs, etpUs };
  }
  const n = etp * ep;
  if (n <= 1) return { exchangeUs: 0, etpUs: 0 };
  const g = Math.min(links.tpEpPerNode, n);
  const copies = v.topk * etp;
  const interBytes = v.tokens * row * remoteNodesPerToken(n, g, copies) * v.imbalance;
  const intraBytes = ((v.routedRows * etp * (g - 1)) / n) * row * v.imbalance;
  const intraUs = intraBytes / (links.intra.busGBps * deepEpEfficiency.intra * 1e3);
  const interUs = interBytes / (links.interGBps * deepEpEfficiency.inter * 1e3);
  const alpha = g < n ? links.interAlphaUs : links.intra.alphaUs;
  return { exchangeUs: alpha + Math.max(intraUs, interUs), etpUs: 0 };
}
