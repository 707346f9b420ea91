import { quoted } from '../core/quote.ts';
import type { SystemSpec } from './systems.ts';
import {
  derivedKind,
  nearestNics,
  nvlinkPerLinkGBps,
  smpLinks,
  type NicSpec,
  type NodeTopology,
  type NvlinkSpec,
  type PathCell,
  type PathKind,
  type SmpLink,
} from './topology.ts';

/** What a catalog node is built from: its structure; the matrix and NIC choice follow. */
export interface NodeLayout {
  readonly label: string;
  readonly socketOf: readonly number[];
  readonly switchOf: readonly (number | null)[];
  /** Switch → upper bridge (default: each switch its own, so two switches meet at the root complex). */
  readonly bridgeOf?: readonly number[];
  readonly nics: readonly NicSpec[];
  readonly pcieGen: 3 | 4 | 5;
  readonly intelRootComplex: boolean;
  readonly smp: SmpLink;
  readonly nvlink?: NvlinkSpec;
  /** [i][j] NVLinks bonded between GPU i and j (direct links, no NVSwitch); absent: none or switched. */
  readonly nvPairs?: readonly (readonly number[])[];
  readonly source: string;
}

/** The node of `layout`: the nvidia-smi matrix from the structure, each GPU's nearest NIC. */
export function buildNode(layout: NodeLayout): NodeTopology {
  const gpus = layout.socketOf.length;
  const switches = Math.max(-1, ...layout.switchOf.map((s) => s ?? -1)) + 1;
  const bridgeOf = layout.bridgeOf ?? Array.from({ length: switches }, (_, k) => k);
  const shape = { socketOf: layout.socketOf, switchOf: layout.switchOf, bridgeOf };
  const matrix: PathCell[][] = Array.from({ length: gpus }, (_, i) =>
    Array.from({ length: gpus }, (_, j): PathCell => {
      if (layout.nvlink?.switched) return { kind: 'NV', nvlinks: layout.nvlink.linksPerGpu };
      const nv = layout.nvPairs?.[i]?.[j] ?? 0;
      return nv > 0 ? { kind: 'NV', nvlinks: nv } : { kind: derivedKind(shape, i, j), nvlinks: 0 };
    }),
  );
  const nicKind = (g: number, k: number): PathKind => {
    const nic = layout.nics[k]!;
    const withNic = {
      socketOf: [...layout.socketOf, nic.socket],
      switchOf: [...layout.switchOf, nic.pcieSwitch],
      bridgeOf,
    };
    return derivedKind(withNic, g, gpus);
  };
  return {
    label: layout.label,
    gpus,
    sockets: Math.max(...layout.socketOf) + 1,
    socketOf: layout.socketOf,
    switchOf: layout.switchOf,
    bridgeOf,
    matrix,
    nics: layout.nics,
    nicOf: nearestNics(gpus, nicKind, layout.nics.length),
    pcieGen: layout.pcieGen,
    intelRootComplex: layout.intelRootComplex,
    smp: layout.smp,
    nvlink: layout.nvlink,
    source: layout.source,
  };
}

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);
const nic = (name: string, socket: number, pcieSwitch: number | null): NicSpec => ({ name, socket, pcieSwitch });

/**
 * The seeds' 8×V100 PCIe box (seed 004 M106, seed 002 M032, seed 001 §1.4; docs/sources.md): two sockets, two
 * PCIe switches per socket, two GPUs per switch, so a pair is PIX under one switch, PHB across
 * the switches of a socket and SYS across sockets — the three kinds the seeds' concurrent
 * experiment had one flow each of. The layout of the 8-GPU PCIe boxes whose `nvidia-smi topo -m`
 * is public (tests/fixtures/topo: NVIDIA/nccl#1439, kubernetes/kubernetes#53497). One NIC on
 * socket 0's root complex (the kubernetes#53497 box's mlx4_0: PHB to socket 0's GPUs).
 * Cross-socket path: 7.6 GB/s, the bus bandwidth measured on the box (seed 002 M037/M040) for the
 * 8-GPU ring, whose slowest hops cross the sockets; NCCL's SKL_QPI_BW would say 10.
 */
const seedsBox = buildNode({
  label: "8×V100 PCIe: 2 sockets × 2 PCIe switches × 2 GPUs (the seeds' box)",
  socketOf: [0, 0, 0, 0, 1, 1, 1, 1],
  switchOf: [0, 0, 1, 1, 2, 2, 3, 3],
  nics: [nic('mlx5_0', 0, null)],
  pcieGen: 3,
  intelRootComplex: true,
  smp: {
    label: 'measured on the box',
    GBps: 7.6,
    source: "seed 002 M037/M040: 7.6 GB/s bus bandwidth of the 8-GPU ring on the seeds' box",
  },
  source:
    'seeds 001 §1.4, 002 M032, 004 M106 (PIX / PHB / SYS pairs); public 8×PCIe-GPU matrices (NVIDIA/nccl#1439, kubernetes#53497)',
});

/**
 * DGX-1 (V100): NVLink hybrid cube-mesh — the NV1/NV2 pairs of a DGX-1's `nvidia-smi topo -m`
 * (NVIDIA/nccl-tests#29) — four PCIe switches of two GPUs and one EDR NIC each (DGX-1 datasheet:
 * 4× EDR), two Broadwell sockets (E5-2698 v4).
 */
const dgx1Nv = [
  [0, 2, 2, 1, 1, 0, 0, 0],
  [2, 0, 1, 2, 0, 1, 0, 0],
  [2, 1, 0, 1, 0, 0, 2, 0],
  [1, 2, 1, 0, 0, 0, 0, 2],
  [1, 0, 0, 0, 0, 2, 2, 1],
  [0, 1, 0, 0, 2, 0, 1, 2],
  [0, 0, 2, 0, 2, 1, 0, 1],
  [0, 0, 0, 2, 1, 2, 1, 0],
];
const dgx1 = buildNode({
  label: 'DGX-1: NVLink hybrid cube-mesh, 4 PCIe switches, 2 sockets',
  socketOf: [0, 0, 0, 0, 1, 1, 1, 1],
  switchOf: [0, 0, 1, 1, 2, 2, 3, 3],
  nics: range(4).map((k) => nic(`mlx5_${k}`, k < 2 ? 0 : 1, k)),
  pcieGen: 3,
  intelRootComplex: true,
  smp: smpLinks.broadwell,
  nvlink: {
    perLinkGBps: nvlinkPerLinkGBps.volta,
    linksPerGpu: 6,
    switched: false,
    source: 'NCCL src/graph/topo.h SM70_NVLINK_BW 20.0',
  },
  nvPairs: dgx1Nv,
  source: 'DGX-1 datasheet; cube-mesh pairs as nvidia-smi topo -m prints them (NVIDIA/nccl-tests#29)',
});

/** An NVSwitch node: every pair NV<links>, GPU g on PCIe switch ⌊g/perSwitch⌋ with NIC g, sockets split in half. */
function nvswitchNode(
  label: string,
  gpus: number,
  links: number,
  perLinkGBps: number,
  perSwitch: number,
  pcieGen: 3 | 4 | 5,
  intelRootComplex: boolean,
  smp: SmpLink,
  source: string,
): NodeTopology {
  const half = gpus / 2;
  const socketOf = range(gpus).map((g) => (g < half ? 0 : 1));
  const switchOf = range(gpus).map((g) => Math.floor(g / perSwitch));
  return buildNode({
    label,
    socketOf,
    switchOf,
    nics: range(gpus).map((g) => nic(`mlx5_${g}`, socketOf[g]!, switchOf[g]!)),
    pcieGen,
    intelRootComplex,
    smp,
    nvlink: {
      perLinkGBps,
      linksPerGpu: links,
      switched: true,
      source: `NCCL src/graph/topo.h: ${perLinkGBps} GB/s per NVLink × ${links} links per GPU`,
    },
    source,
  });
}

/** The catalog's node topologies, by system name (absent for user-defined systems). */
export const nodeTopologies: Readonly<Record<string, NodeTopology>> = {
  'v100-pcie-8': seedsBox,
  'dgx1-v100': dgx1,
  'dgx2-v100': nvswitchNode(
    'DGX-2: 16×V100 on NVSwitch, PCIe switch per 2 GPUs with one NIC, 2 sockets',
    16,
    6,
    nvlinkPerLinkGBps.volta,
    2,
    3,
    true,
    smpLinks.skylake,
    'DGX-2 datasheet (2× Xeon Platinum 8168, 8× EDR); NVIDIA/nccl-tests#78 matrix (NV6, PIX to one mlx5)',
  ),
  'dgx-a100': nvswitchNode(
    'DGX A100: NVSwitch (NV12), PCIe switch per 2 GPUs with 2 NICs, 2 AMD sockets',
    8,
    12,
    nvlinkPerLinkGBps.ampere,
    2,
    4,
    false,
    smpLinks.amd,
    'DGX A100 datasheet (2× AMD EPYC 7742, 8× HDR)',
  ),
  'dgx-a100-40gb': nvswitchNode(
    'DGX A100 (2020): NVSwitch (NV12), PCIe switch per 2 GPUs with 2 NICs, 2 AMD sockets',
    8,
    12,
    nvlinkPerLinkGBps.ampere,
    2,
    4,
    false,
    smpLinks.amd,
    'DGX A100 datasheet, 2020 (2× AMD EPYC 7742, 8× HDR)',
  ),
  'dgx-h100': nvswitchNode(
    'DGX H100: NVSwitch (NV18), a PCIe switch and NIC per GPU, 2 sockets',
    8,
    18,
    nvlinkPerLinkGBps.hopper,
    1,
    5,
    true,
    smpLinks.sapphireRapids,
    'DGX H100 datasheet (2× Xeon Platinum 8480C, 8× ConnectX-7); NVIDIA/nccl#1453 matrix (NV18, PIX NIC per GPU)',
  ),
  'dgx-h200': nvswitchNode(
    'DGX H200: NVSwitch (NV18), a PCIe switch and NIC per GPU, 2 sockets',
    8,
    18,
    nvlinkPerLinkGBps.hopper,
    1,
    5,
    true,
    smpLinks.sapphireRapids,
    'DGX H200 datasheet (2× Xeon Platinum 8480C, 8× ConnectX-7)',
  ),
  'dgx-b200': nvswitchNode(
    'DGX B200: NVSwitch (NV18, NVLink 5), a PCIe switch and NIC per GPU, 2 sockets',
    8,
    18,
    nvlinkPerLinkGBps.blackwell,
    1,
    5,
    true,
    smpLinks.emeraldRapids,
    'DGX B200 datasheet (2× Xeon Platinum 8570, 8× ConnectX-7)',
  ),
  'gb200-nvl72': nvswitchNode(
    'GB200 NVL72: 72 GPUs on NVLink switch trays (NV18), one NIC per GPU, Grace sockets summarized in two halves',
    72,
    18,
    nvlinkPerLinkGBps.blackwell,
    1,
    5,
    false,
    { label: 'not on any GPU pair (all pairs NVLink)', GBps: 0, source: 'no GPU pair of the rack crosses it' },
    'GB200 NVL72 spec; DGX GB200 datasheet (one ConnectX-7 per GPU)',
  ),
};

/** The node topology of `system`, or a message saying how to give one. */
export function systemTopology(system: SystemSpec): NodeTopology {
  const base = system.name.split('+')[0]!;
  const t = nodeTopologies[base];
  if (!t)
    throw new Error(
      `system ${quoted(system.name)} has no topology in the catalog: pass an nvidia-smi topo -m output with --topo-file FILE, or use ${Object.keys(nodeTopologies).join(', ')}.`,
    );
  if (t.gpus !== system.gpusPerNode)
    throw new Error(`topology of ${system.name}: ${t.gpus} GPUs, the system has ${system.gpusPerNode} per node.`);
  return t;
}
