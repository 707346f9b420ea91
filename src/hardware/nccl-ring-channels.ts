import type { GpuArch } from './gpus.ts';
import { pcieGBps } from './topology.ts';

/**
 * How many channels (one CTA each, so SMs) NCCL runs a ring collective on when the ring crosses
 * nodes with k ranks per node, each on its own NIC — NCCL v2.21.5-1 (the release of mid-2024):
 *
 * 1. Topology search (src/graph/search.cc `ncclTopoCompute`): each search channel is a ring
 *    NET → the node's k GPUs → NET at one speed from a fixed list — sm90SpeedArrayInter
 *    {48, 45, 42, 40, 30, 24, …} for compute capability ≥ 9.0, speedArrayInter {48, 30, 28, 24,
 *    …} below (:851, :856) — starting at the first speed ≤ the GPU → NIC path bandwidth P
 *    (:922). P = min(PCIe link, NIC): NCCL prices a PCIe x16 link at width·speed/80 = 12, 24, 48
 *    GB/s for Gen3/4/5 (src/graph/topo.cc:459, topology.ts `pcieGBps`) and a NIC at its line
 *    rate (Mb/s / 8000, :358: NDR 50, HDR 25, EDR 12.5). A NIC then carries one channel at
 *    s = the first speed ≤ P (a second needs 2s > P), so the search ends with k channels at s.
 * 2. Duplication (`ncclTopoDupChannels`, :835-848): doubled, each at s/2, unless s < 25 or
 *    (compute capability > 8.0, s < 50 and more than 4 channels); at most 16 (init.cc:1051,
 *    MAXCHANNELS/2).
 * 3. Connection (src/graph/connect.cc): doubled again, "Duplication should be complete now"
 *    (:442-443, at most MAXCHANNELS = 32); on Hopper (compute capability exactly 9.0) across
 *    nodes, doubled once more where the search channel's speed is still > 45 and fewer than 16
 *    ("Use 4 compute channels per search channel to reach peak BW on <8 PPN", :456-458).
 *    NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS (unset by default) would bound this (:462-470).
 *
 * So one rank per node (the DP ring of t·p·cp = 8 on a node of 8): an H100 on NDR runs 4
 * channels (48 → dup 2 × 24 → 4), an A100 on HDR 2 (24 < 25: no dup → 2); 8 per node 16 on
 * either. NCCL logs of one GPU per node on PCIe Gen4 or slower NICs print "Channel 00/02"
 * (NVIDIA/nccl #1066, NCCL 2.12.12). A large collective runs on all of them (enqueue.cc lowers
 * the count only for small messages). NCCL 2.23 added PAT for all-gather and reduce-scatter
 * at one rank per node, which this does not describe.
 */
const speedsSm90 = [48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12] as const;
const speedsPreSm90 = [48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3, 2.4, 1.2, 0.24, 0.12] as const;

/** PCIe generation of a GPU's host link, by architecture (V100 Gen3, A100 Gen4, H100 and Blackwell Gen5: their datasheets). */
const pcieGen: Readonly<Record<GpuArch, 3 | 4 | 5>> = { volta: 3, ampere: 4, hopper: 5, blackwell: 5 };

/** NCCL's search speed for one channel through a GPU → NIC path of `pathGBps` (step 1). */
export function ncclSearchSpeed(arch: GpuArch, pathGBps: number): number {
  const speeds = arch === 'hopper' || arch === 'blackwell' ? speedsSm90 : speedsPreSm90;
  return speeds.find((s) => s <= pathGBps) ?? speeds[speeds.length - 1]!;
}

/**
 * Channels of a ring across nodes with `ranksPerNode` ranks on each, each through its own NIC
 * (`nics` per node), on GPUs of `arch` whose NIC runs at `nicGBps`: steps 1–3 above.
 */
export function ncclRingChannels(arch: GpuArch, ranksPerNode: number, nics: number, nicGBps: number): number {
  const k = Math.max(1, Math.min(ranksPerNode, nics, 16));
  const s = ncclSearchSpeed(arch, Math.min(pcieGBps(pcieGen[arch]), nicGBps));
  const ccAbove80 = arch === 'hopper' || arch === 'blackwell';
  const dup = s >= 25 && !(ccAbove80 && s < 50 && k > 4);
  const searched = dup ? Math.min(2 * k, 16) : k;
  const bw = dup ? s / 2 : s;
  const connected = Math.min(32, 2 * searched);
  return arch === 'hopper' && bw > 45 && connected < 16 ? 2 * connected : connected;
}

/** NCCL_NVLS_NCHANNELS' default: the channels of an NVLink SHARP collective on Hopper (src/transport/nvls.cc:232, v2.21.5-1). */
export const ncclNvlsChannels = 16;

/**
 * Channels of a ring inside one NVSwitch node (NCCL v2.21.5-1): the search (search.cc) runs
 * channels at the first listed speed ≤ the GPU's NVLink bandwidth L = links × per-link (topo.h:
 * SM80_NVLINK_BW 20, SM90_NVLINK_BW 20.6; A100 12 links 240, H100 18 links 370.8) — speedArrayIntra
 * {40, 30, 20, …}, sm90SpeedArrayIntra {60, 50, 40, 30, …} (:850, :855) — ⌊L/s⌋ of them (each
 * ring passes every GPU's switch link once each way), keeping that count where slower speeds give
 * no more bandwidth (A100 6 × 40 = 240, H100 6 × 60 = 360); ncclTopoDupChannels doubles them at
 * half speed (12); connect.cc doubles again (24). A 2-GPU H20 node (18 links, NCCL 2.27.5) prints
 * "Channel 00/24" (NVIDIA/nccl #1781). On Hopper an all-reduce (and, by the tuner's choice, an
 * all-gather or reduce-scatter) may run NVLink SHARP instead, on NCCL_NVLS_NCHANNELS = 16
 * channels by default (src/transport/nvls.cc:232).
 */
export function ncclNvswitchRingChannels(arch: GpuArch, nvlinks: number): number {
  const sm90 = arch === 'hopper' || arch === 'blackwell';
  const speeds = sm90 ? [60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3] : [40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3];
  const l = nvlinks * (sm90 ? 20.6 : 20);
  const s = speeds.find((x) => x <= l) ?? speeds[speeds.length - 1]!;
  const k = Math.max(1, Math.min(16, Math.floor(l / s)));
  const dup = s >= 25 && !(sm90 && s < 50 && k > 4);
  return Math.min(32, 2 * (dup ? Math.min(2 * k, 16) : k));
}
