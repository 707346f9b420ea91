import { quoted } from '../core/quote.ts';
import { gpus, type GpuName, type GpuSpec } from './gpus.ts';
import { interconnectPresets, type Interconnect } from './interconnect.ts';
import type { FittedCollective, KernelScale, MeasuredGemm } from './calibrated-rates.ts';
import { ringNodeScale } from './ring-node-scaling.ts';
import { ncclRingChannels } from './nccl-ring-channels.ts';

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
  /** GEMMs timed on this machine (a calibrated system file): they replace the tile model for their exact shapes. */
  readonly measuredGemms?: readonly MeasuredGemm[];
  /** Kernel time per class against the model's, measured in one job's trace (a what-if system). */
  readonly kernelScale?: KernelScale;
  /** The host side of one GPU: its link to the CPU and its share of the CPU's memory bandwidth (absent: not known). */
  readonly host?: HostSide;
}

/**
 * One GPU's host: `linkGBps` its link to the CPU per direction (PCIe, or NVLink-C2C on Grace), and
 * `dramGBps` its share of the CPU sockets' DRAM bandwidth (channels × transfer rate × 8 bytes per
 * socket, all sockets over the node's GPUs): datasheet peaks, what an offloaded optimizer can reach
 * at best.
 */
export interface HostSide {
  readonly linkGBps: number;
  readonly dramGBps: number;
  readonly source: string;
}

/** A PCIe generation's x16 link per direction, GB/s: the GPU datasheets' bidirectional figure halved. */
const pcieX16 = { gen3: 16, gen4: 32, gen5: 64 } as const;

/** DRAM peak of `sockets` CPUs of `channels` channels at `mts` MT/s, over `gpus` GPUs, GB/s each. */
const dramPerGpu = (sockets: number, channels: number, mts: number, gpus: number): number =>
  (sockets * channels * mts * 8) / 1e3 / gpus;

/** The scale-out fabric's technology: InfiniBand, or RDMA over Converged Ethernet. */
export type FabricKind = 'infiniband' | 'roce';

/**
 * The network between nodes. Every catalog fabric is rail-optimized (NVIDIA's DGX SuperPOD
 * reference architecture: NIC i of every node on leaf switch i, so the ranks with the same local
 * index talk through one switch hop and NCCL runs one ring per NIC); `groupLink` prices a group
 * that crosses nodes with min(ranks per node, NICs per node) NICs in parallel.
 */
export interface InterNode {
  readonly label: string;
  readonly fabric: FabricKind;
  /** Achieved bandwidth of one NIC, GB/s. */
  readonly nicGBps: number;
  readonly nicsPerNode: number;
  readonly alphaUs: number;
  readonly source: string;
  /** α and B fitted to nccl-tests runs across nodes (B as measured with the run's ranks per node). */
  readonly fitted?: readonly FittedCollective[];
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
  fabric: 'infiniband',
  nicGBps: 0.96 * lineGBps,
  nicsPerNode,
  alphaUs: 5,
  source: `${source}; ${label} ${lineGBps} GB/s line rate per port, 96% achieved assumed`,
});

/**
 * RoCE v2 on 400 GbE (e.g. NVIDIA Spectrum-X, ConnectX-7 in Ethernet mode): 50 GB/s line rate
 * per port; 95% achieved assumed (Ethernet + IP + UDP + RoCE headers on 4 KiB frames are ≈ 2%,
 * plus congestion control); α 6 µs per step assumed (a little above InfiniBand's).
 */
const roce = (lineGBps: number, nicsPerNode: number, source: string): InterNode => ({
  label: `${nicsPerNode}× RoCE v2 ${lineGBps * 8} GbE`,
  fabric: 'roce',
  nicGBps: 0.95 * lineGBps,
  nicsPerNode,
  alphaUs: 6,
  source: `${source}; ${lineGBps * 8} GbE ${lineGBps} GB/s line rate per port, 95% achieved assumed`,
});

/** Named scale-out fabrics, to put a catalog node on another network (`withFabric`, CLI --fabric). */
export const fabrics = {
  'ib-edr': (n: number): InterNode => ib('EDR', 12.5, n, 'InfiniBand EDR 100 Gb/s'),
  'ib-hdr': (n: number): InterNode => ib('HDR', 25, n, 'InfiniBand HDR 200 Gb/s'),
  'ib-ndr': (n: number): InterNode => ib('NDR', 50, n, 'InfiniBand NDR 400 Gb/s'),
  'roce-400': (n: number): InterNode => roce(50, n, 'RoCE v2, 400 GbE'),
} as const;

/** A named fabric's key. */
export type FabricName = keyof typeof fabrics;

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

/**
 * B200 / GB200 NVLink 5: 18 links × 50 GB/s = 900 GB/s per direction per GPU (1.8 TB/s
 * bidirectional: DGX B200 datasheet, GB200 NVL72 spec), less the ~20% NCCL protocol overhead the
 * NCCL maintainer gives for NVLink (nccl-tests#212): ≈ 720 GB/s bus bandwidth. A derivation from
 * line rate, not a measurement.
 */
const nvlink5: Interconnect = {
  name: 'nvlink5',
  label: 'NVSwitch, NVLink 5',
  alphaUs: 1,
  busGBps: 720,
  source: '18 × 50 GB/s NVLink 5 per direction (DGX B200 datasheet) less ~20% NCCL protocol overhead (nccl-tests#212)',
};

/** The systems of the catalog. */
export const systems = {
  /**
   * The seeds' machine: 8×V100 PCIe on PCIe Gen3, 7.6 GB/s bus bandwidth measured (seed 002
   * M037/M040, docs/sources.md).
   */
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
    host: {
      linkGBps: pcieX16.gen3,
      dramGBps: dramPerGpu(2, 4, 2400, 8),
      source: 'DGX-1 datasheet: 2× Xeon E5-2698 v4 (4 channels DDR4-2400 each); V100: PCIe Gen3 32 GB/s',
    },
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
    host: {
      linkGBps: pcieX16.gen3,
      dramGBps: dramPerGpu(2, 6, 2666, 16),
      source: 'DGX-2 datasheet: 2× Xeon Platinum 8168 (6 channels DDR4-2666 each); V100: PCIe Gen3 32 GB/s',
    },
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
    host: {
      linkGBps: pcieX16.gen4,
      dramGBps: dramPerGpu(2, 8, 3200, 8),
      source: 'DGX A100 datasheet: 2× AMD EPYC 7742 (8 channels DDR4-3200 each); A100: PCIe Gen4 64 GB/s',
    },
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
    host: {
      linkGBps: pcieX16.gen5,
      dramGBps: dramPerGpu(2, 8, 4800, 8),
      source: 'DGX H100 datasheet: 2× Xeon Platinum 8480C (8 channels DDR5-4800 each); H100 SXM: PCIe Gen5 128 GB/s',
    },
  },
  /**
   * The 2020 DGX A100 (DGX A100 datasheet, first edition): 8× A100 SXM 40 GB, six NVSwitches
   * (NVLink 3, 600 GB/s bidirectional per GPU), 8× single-port ConnectX-6 HDR 200 Gb/s for the
   * compute fabric (plus storage ports, not modelled).
   */
  'dgx-a100-40gb': {
    name: 'dgx-a100-40gb',
    label: 'DGX A100 (2020): 8×A100 40 GB, NVLink 3',
    gpu: gpus['a100-sxm-40gb'],
    gpusPerNode: 8,
    intra: interconnectPresets['nvlink-a100'],
    inter: ib('HDR', 25, 8, 'DGX A100 datasheet (2020): 8× ConnectX-6 HDR'),
    collectiveBaseUs: ncclBaseUs,
    source: 'NVIDIA DGX A100 datasheet (2020, 320 GB system)',
  },
  /** NVIDIA DGX H200 datasheet: 8× H200 SXM 141 GB, NVSwitch (NVLink 4, 900 GB/s), 8× ConnectX-7 NDR 400 Gb/s. */
  'dgx-h200': {
    name: 'dgx-h200',
    label: 'DGX H200: 8×H200 SXM, NVLink 4',
    gpu: gpus['h200-sxm'],
    gpusPerNode: 8,
    intra: interconnectPresets['nvswitch-h100'],
    inter: ib('NDR', 50, 8, 'DGX H200 datasheet: 8× ConnectX-7 NDR'),
    collectiveBaseUs: ncclBaseUs,
    source: 'NVIDIA DGX H200 datasheet',
    host: {
      linkGBps: pcieX16.gen5,
      dramGBps: dramPerGpu(2, 8, 4800, 8),
      source: 'DGX H200 datasheet: 2× Xeon Platinum 8480C (8 channels DDR5-4800 each); H200 SXM: PCIe Gen5 128 GB/s',
    },
  },
  /**
   * NVIDIA DGX B200 datasheet: 8× B200 (1,440 GB), NVSwitch (NVLink 5, 1.8 TB/s per GPU,
   * 14.4 TB/s aggregate), 8× single-port ConnectX-7 VPI up to 400 Gb/s InfiniBand.
   */
  'dgx-b200': {
    name: 'dgx-b200',
    label: 'DGX B200: 8×B200, NVLink 5',
    gpu: gpus.b200,
    gpusPerNode: 8,
    intra: nvlink5,
    inter: ib('NDR', 50, 8, 'DGX B200 datasheet: 8× ConnectX-7 400 Gb/s'),
    collectiveBaseUs: ncclBaseUs,
    source: 'NVIDIA DGX B200 datasheet',
    host: {
      linkGBps: pcieX16.gen5,
      dramGBps: dramPerGpu(2, 8, 5600, 8),
      source: 'DGX B200 datasheet: 2× Xeon Platinum 8570 (8 channels DDR5-5600 each), PCIe Gen5',
    },
  },
  /**
   * NVIDIA GB200 NVL72 spec and DGX GB200 datasheet: one rack, 36 Grace CPUs and 72 Blackwell
   * GPUs in one NVLink 5 domain (1.8 TB/s per GPU through the NVLink switch trays, 130 TB/s
   * aggregate), so the NVLink "node" of this model is the rack: 72 GPUs. Scale-out: one
   * ConnectX-7 400 Gb/s InfiniBand port per GPU (72 per rack).
   */
  'gb200-nvl72': {
    name: 'gb200-nvl72',
    label: 'GB200 NVL72: 72 Blackwell GPUs in one NVLink 5 domain',
    gpu: gpus['gb200-gpu'],
    gpusPerNode: 72,
    intra: nvlink5,
    inter: ib('NDR', 50, 72, 'DGX GB200 datasheet: one ConnectX-7 400 Gb/s per GPU'),
    collectiveBaseUs: ncclBaseUs,
    source: 'NVIDIA GB200 NVL72 spec; DGX GB200 datasheet',
    host: {
      linkGBps: 450,
      dramGBps: 512 / 2,
      source:
        'GB200 NVL72 spec: NVLink-C2C 900 GB/s bidirectional Grace ↔ Blackwell; one Grace (LPDDR5X, up to 512 GB/s) per two GPUs',
    },
  },
} as const satisfies Record<string, SystemSpec>;

/** A catalog system's key. */
export type SystemName = keyof typeof systems;

/** Every catalog system, in display order. */
export const systemNames = Object.keys(systems) as SystemName[];

/** `system` with its scale-out network replaced by the named fabric, NIC count kept (CLI --fabric). */
export function withFabric(system: SystemSpec, fabric: string): SystemSpec {
  if (!Object.hasOwn(fabrics, fabric))
    throw new Error(`unknown fabric ${quoted(fabric)}: use ${Object.keys(fabrics).join(', ')}.`);
  const inter = fabrics[fabric as FabricName](system.inter.nicsPerNode);
  return { ...system, name: `${system.name}+${fabric}`, label: `${system.label}, ${inter.label}`, inter };
}

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
 * min(intra, min(perNode, NICs) × NIC bandwidth × ringNodeScale(nodes)), α the network's, on
 * the channels (SMs) NCCL gives such a ring (nccl-ring-channels.ts).
 */
export function groupLink(system: SystemSpec, size: number, perNode: number): Interconnect {
  if (size <= perNode) return system.intra;
  const nics = Math.max(1, Math.min(perNode, system.inter.nicsPerNode));
  // A ring across more nodes runs slower (ring-node-scaling.ts, measured reduce-scatter on H100 nodes).
  const nodes = Math.ceil(size / perNode);
  const busGBps = Math.min(system.intra.busGBps, nics * system.inter.nicGBps * ringNodeScale(nodes));
  // A fit measured with k ranks per node drove min(k, NICs) NICs: per NIC B/min(k, NICs), so this
  // group's rings get that times its own NIC count (capped by the intra link, as above).
  const fitted = system.inter.fitted?.map((f) => ({
    ...f,
    busGBps: Math.min(
      system.intra.busGBps,
      (f.busGBps / Math.max(1, Math.min(f.ranksPerNode, system.inter.nicsPerNode))) * nics,
    ),
  }));
  return {
    name: 'inter-node',
    label: `${system.inter.label} (${nics} NIC${nics > 1 ? 's' : ''} per node in the ring)`,
    alphaUs: system.inter.alphaUs,
    busGBps,
    ncclChannels: ncclRingChannels(system.gpu.arch, perNode, system.inter.nicsPerNode, system.inter.nicGBps),
    source: system.inter.source,
    ...(fitted && { fitted }),
  };
}
