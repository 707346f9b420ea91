import { quoted } from '../core/quote.ts';
import { gpus, type GpuName, type GpuSpec } from './gpus.ts';
import { interconnectPresets, type Interconnect } from './interconnect.ts';

/**
 * One machine of a cluster: GPUs per node, the link between GPUs of a node (an alpha-beta ring
 * of interconnect.ts), the network between nodes, and the fixed cost of one NCCL call.
 *
 * Collective time = `collectiveBaseUs` + the ring model (α per step, bus bandwidth B) of the
 * link the group uses. NCCL's own tuning model has the same two terms: a base latency per call
 * plus a per-hop latency (src/graph/tuning.cc, `baseLat` and `hwLat`; Ring baseLat 6.6 µs for
 * LL and 8.4 µs for Simple in NCCL 2.1x).
 */
export interface SystemSpec {
  readonly name: string;
  readonly label: string;
  readonly gpu: GpuSpec;
  readonly gpusPerNode: number;
  /** GPU ↔ GPU inside a node. */
  readonly intra: Interconnect;
  /** The network: per-NIC bandwidth (GB/s) and NICs per node; α per ring step across nodes. */
  readonly inter: InterNode;
  /** Fixed cost of one collective call, µs. */
  readonly collectiveBaseUs: number;
  readonly source: string;
}

/** The network between nodes. */
export interface InterNode {
  readonly label: string;
  /** Achieved bandwidth of one NIC, GB/s. */
  readonly nicGBps: number;
  readonly nicsPerNode: number;
  readonly alphaUs: number;
  readonly source: string;
}

/** NCCL 2.1x src/graph/tuning.cc: Ring baseLat 6.6 µs (LL, the protocol of small messages). */
const ncclBaseUs = 6.6;

/**
 * InfiniBand: EDR 100, HDR 200, NDR 400 Gb/s per port (12.5, 25, 50 GB/s line rate). Achieved
 * ≈ 96% of line rate assumed (64b/66b encoding and packet headers); α 5 µs per step assumed
 * (NCCL tuning.cc hwLat for the network is a few µs).
 */
const ib = (label: string, lineGBps: number, nicsPerNode: number, source: string): InterNode => ({
  label: `${nicsPerNode}× InfiniBand ${label}`,
  nicGBps: 0.96 * lineGBps,
  nicsPerNode,
  alphaUs: 5,
  source: `${source}; ${label} ${lineGBps} GB/s line rate per port, 96% achieved assumed`,
});

/**
 * V100 NVLink 2: 6 links × 25 GB/s = 150 GB/s per direction per GPU (V100 datasheet: 300 GB/s
 * bidirectional), less the ~20% NCCL protocol overhead the NCCL maintainer gives for NVLink
 * (nccl-tests#212), ≈ 120 GB/s bus bandwidth. DGX-1's hybrid cube-mesh and DGX-2's NVSwitch both
 * give each GPU its six links.
 */
const nvlinkV100 = (label: string): Interconnect => ({
  name: 'nvlink-v100',
  label,
  alphaUs: 1,
  busGBps: 120,
  source: '6 × 25 GB/s NVLink 2 per direction (V100 datasheet) less ~20% NCCL protocol overhead (nccl-tests#212)',
});

/** The systems of the catalog. */
export const systems = {
  /** The seeds' machine: 8×V100 PCIe on PCIe Gen3, 7.6 GB/s bus bandwidth measured (seed M037/M040). */
  'v100-pcie-8': {
    name: 'v100-pcie-8',
    label: '8×V100 PCIe box, PCIe Gen3',
    gpu: gpus['v100-pcie'],
    gpusPerNode: 8,
    intra: interconnectPresets['pcie-gen3'],
    inter: ib('EDR', 12.5, 1, 'one EDR HCA per PCIe server assumed'),
    collectiveBaseUs: ncclBaseUs,
    source: "seed 002 M037/M040 (7.6 GB/s bus bandwidth on the seeds' box)",
  },
  /** NVIDIA DGX-1 (V100) datasheet: 8× V100 SXM2 32 GB, NVLink hybrid cube-mesh, 4× IB EDR 100 Gb/s. */
  'dgx1-v100': {
    name: 'dgx1-v100',
    label: 'DGX-1: 8×V100 SXM2, NVLink 2',
    gpu: gpus['v100-sxm2'],
    gpusPerNode: 8,
    intra: nvlinkV100('NVLink 2 hybrid cube-mesh'),
    inter: ib('EDR', 12.5, 4, 'DGX-1 datasheet: 4× EDR'),
    collectiveBaseUs: ncclBaseUs,
    source: 'NVIDIA DGX-1 datasheet',
  },
  /** NVIDIA DGX-2 datasheet: 16× V100 SXM3 32 GB (V100 peaks) on 12 NVSwitches, 8× IB EDR 100 Gb/s. */
  'dgx2-v100': {
    name: 'dgx2-v100',
    label: 'DGX-2: 16×V100, NVSwitch',
    gpu: gpus['v100-sxm2'],
    gpusPerNode: 16,
    intra: nvlinkV100('NVSwitch, NVLink 2'),
    inter: ib('EDR', 12.5, 8, 'DGX-2 datasheet: 8× EDR'),
    collectiveBaseUs: ncclBaseUs,
    source: 'NVIDIA DGX-2 datasheet',
  },
  /** NVIDIA DGX A100 datasheet: 8× A100 80 GB, NVSwitch (NVLink 3, 600 GB/s bidirectional), 8× HDR 200 Gb/s. */
  'dgx-a100': {
    name: 'dgx-a100',
    label: 'DGX A100: 8×A100 80 GB, NVLink 3',
    gpu: gpus['a100-sxm-80gb'],
    gpusPerNode: 8,
    intra: interconnectPresets['nvlink-a100'],
    inter: ib('HDR', 25, 8, 'DGX A100 datasheet: 8× HDR'),
    collectiveBaseUs: ncclBaseUs,
    source: 'NVIDIA DGX A100 datasheet',
  },
  /** NVIDIA DGX H100 datasheet: 8× H100 SXM, NVSwitch (NVLink 4, 900 GB/s bidirectional), 8× NDR 400 Gb/s. */
  'dgx-h100': {
    name: 'dgx-h100',
    label: 'DGX H100: 8×H100 SXM, NVLink 4',
    gpu: gpus['h100-sxm'],
    gpusPerNode: 8,
    intra: interconnectPresets['nvswitch-h100'],
    inter: ib('NDR', 50, 8, 'DGX H100 datasheet: 8× NDR (ConnectX-7)'),
    collectiveBaseUs: ncclBaseUs,
    source: 'NVIDIA DGX H100 datasheet',
  },
} as const satisfies Record<string, SystemSpec>;

/** A catalog system's key. */
export type SystemName = keyof typeof systems;

/** Every catalog system, in display order. */
export const systemNames = Object.keys(systems) as SystemName[];

/** The default machine: the seeds' 8×V100 PCIe box. */
export const defaultSystem: SystemName = 'v100-pcie-8';

/**
 * A user-defined machine: "custom:<gpu>:<GPUs per node>:<α µs>:<GB/s>" (e.g.
 * "custom:a100-sxm-80gb:4:2:100"), the network and the base latency as in the catalog.
 */
export function parseSystem(text: string): SystemSpec {
  if (Object.hasOwn(systems, text)) return systems[text as SystemName];
  const m = /^custom:([^:]+):([^:]+):([^:]+):([^:]+)$/.exec(text);
  if (!m)
    throw new Error(
      `unknown system ${quoted(text)}: use ${systemNames.join(', ')} or custom:<gpu>:<GPUs per node>:<α µs>:<GB/s>.`,
    );
  const [, gpuName, perNode, alpha, bw] = m as unknown as [string, string, string, string, string];
  if (!Object.hasOwn(gpus, gpuName))
    throw new Error(`custom system: unknown GPU ${quoted(gpuName)}: use ${Object.keys(gpus).join(', ')}.`);
  const n = Number(perNode);
  if (!(Number.isInteger(n) && n >= 1 && n <= 64))
    throw new Error(`custom system: GPUs per node (${perNode}) must be a whole number from 1 to 64.`);
  const a = Number(alpha);
  const b = Number(bw);
  if (!(Number.isFinite(a) && a >= 0)) throw new Error(`custom system: α (${alpha} µs) must be a finite number ≥ 0.`);
  if (!(Number.isFinite(b) && b > 0))
    throw new Error(`custom system: bandwidth (${bw} GB/s) must be a finite number > 0.`);
  const gpu = gpus[gpuName as GpuName];
  return {
    name: text,
    label: `custom: ${n}×${gpu.label}, α ${a} µs, ${b} GB/s`,
    gpu,
    gpusPerNode: n,
    intra: { name: 'custom', label: `custom (α ${a} µs, ${b} GB/s)`, alphaUs: a, busGBps: b, source: 'user-defined' },
    inter: ib('HDR', 25, n, 'custom machine: one HDR NIC per GPU assumed'),
    collectiveBaseUs: ncclBaseUs,
    source: 'user-defined',
  };
}

/**
 * The link a group of `size` ranks uses when it holds `perNode` of them on each node (TP ranks
 * are adjacent, Megatron's default rank order, so a TP group of t ≤ GPUs per node stays in one
 * node; a DP group is strided by t). Inside a node: the intra link. Across nodes the ring
 * crosses the network once per node: NCCL runs one ring per NIC, so bus bandwidth is
 * min(intra, min(perNode, NICs) × NIC bandwidth), α the network's.
 */
export function groupLink(system: SystemSpec, size: number, perNode: number): Interconnect {
  if (size <= perNode) return system.intra;
  const nics = Math.max(1, Math.min(perNode, system.inter.nicsPerNode));
  const busGBps = Math.min(system.intra.busGBps, nics * system.inter.nicGBps);
  return {
    name: 'inter-node',
    label: `${system.inter.label} (${nics} NIC${nics > 1 ? 's' : ''} per node in the ring)`,
    alphaUs: system.inter.alphaUs,
    busGBps,
    source: system.inter.source,
  };
}
