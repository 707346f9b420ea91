/**
 * A node's GPU topology as `nvidia-smi topo -m` prints it, plus the physical links behind it.
 *
 * Path kinds (nvidia-smi's legend, best to worst):
 *   NV#  a bonded set of # NVLinks;
 *   PIX  at most one PCIe bridge (two GPUs under one PCIe switch);
 *   PXB  several PCIe bridges, not the host bridge;
 *   PHB  a PCIe host bridge (the CPU's root complex);
 *   NODE the interconnect between host bridges of one NUMA node;
 *   SYS  the SMP interconnect between NUMA nodes (QPI/UPI, Infinity Fabric).
 *
 * Physical model (one direction of each link is a resource of capacity C GB/s): GPU port
 * (GPU ↔ its PCIe switch, or ↔ the root complex without one), switch uplink (switch ↔ root
 * complex), the SMP link between two sockets, NVLink (a pair's bonded links, or each GPU's port
 * into the NVSwitch fabric), and each NIC's port to the network. A path between two GPUs is the
 * chain of these links the kind implies.
 */
export type PathKind = 'NV' | 'PIX' | 'PXB' | 'PHB' | 'NODE' | 'SYS';

/** The kinds in nvidia-smi's order, best first. */
export const pathKinds: readonly PathKind[] = ['NV', 'PIX', 'PXB', 'PHB', 'NODE', 'SYS'];

/** One cell of the matrix between two GPUs (or a GPU and a NIC): the kind, and for NV the bonded link count. */
export interface PathCell {
  readonly kind: PathKind;
  /** NVLinks bonded between the two (NV#); 0 for the PCIe kinds. */
  readonly nvlinks: number;
}

/** A NIC of the node: its name and where it hangs (socket, PCIe switch or none). */
export interface NicSpec {
  readonly name: string;
  readonly socket: number;
  /** The PCIe switch it shares with GPUs; null when it sits on the root complex. */
  readonly pcieSwitch: number | null;
}

/** The link between the sockets: achieved GB/s per direction for GPU traffic, with its source. */
export interface SmpLink {
  readonly label: string;
  readonly GBps: number;
  readonly source: string;
}

/** NVLink of the node: per-link GB/s, links per GPU, and whether they go to an NVSwitch fabric. */
export interface NvlinkSpec {
  readonly perLinkGBps: number;
  readonly linksPerGpu: number;
  /** true: every GPU's links go into an NVSwitch fabric (all pairs NV#, through one port per GPU). */
  readonly switched: boolean;
  readonly source: string;
}

/** One node: GPUs, sockets, PCIe switches, NICs and the links between them. */
export interface NodeTopology {
  readonly label: string;
  readonly gpus: number;
  readonly sockets: number;
  /** GPU → socket (NUMA node). */
  readonly socketOf: readonly number[];
  /** GPU → PCIe switch id; null when the GPU hangs on the root complex. */
  readonly switchOf: readonly (number | null)[];
  /** PCIe switch → upper bridge id: switches with the same one reach each other without the root complex (PXB). */
  readonly bridgeOf: readonly number[];
  /** [i][j]: the path kind between GPU i and GPU j (i ≠ j; the diagonal is unused). */
  readonly matrix: readonly (readonly PathCell[])[];
  readonly nics: readonly NicSpec[];
  /** GPU → index into nics of the NIC it sends through (the nearest; rail i for GPU i when they tie). */
  readonly nicOf: readonly number[];
  /** PCIe generation of the GPU ports and switch uplinks (x16). */
  readonly pcieGen: 3 | 4 | 5;
  /** P2P traffic through an Intel root complex costs 6/5 of its bytes (NCCL INTEL_P2P_OVERHEAD). */
  readonly intelRootComplex: boolean;
  readonly smp: SmpLink;
  readonly nvlink?: NvlinkSpec;
  readonly source: string;
}

/**
 * Achieved GB/s per direction of a PCIe x16 link for GPU traffic: NCCL's PCI_BW = 12 for Gen3 x16
 * (NCCL src/graph/topo.h, 2.19–2.2x: "#define PCI_BW 12.0 // PCI Gen3 x16"), ×2 per generation
 * (8 → 16 → 32 GT/s per lane, same 128b/130b encoding: PCIe 4.0 and 5.0 base specifications).
 */
export const pcieGBps = (gen: 3 | 4 | 5): number => 12 * 2 ** (gen - 3);

/** NCCL src/graph/topo.h: `#define INTEL_P2P_OVERHEAD(bw) (bw*6/5)`: Intel CPUs split P2P traffic into 64 B TLPs. */
export const intelP2pOverhead = 6 / 5;

/**
 * Per-hop latency α (µs) by path kind: the catalog's assumptions (interconnect.ts), inside NCCL's
 * per-hop ring latencies of src/graph/tuning.cc (hwLat: NVLink 0.6–3.4, PCI 1.0–5.7 µs over
 * LL/LL128/Simple). NCCL's table has one PCI row for every path that is not NVLink, so PIX…SYS
 * share one α.
 */
export const hopAlphaUs: Readonly<Record<PathKind, number>> = {
  NV: 1,
  PIX: 3,
  PXB: 3,
  PHB: 3,
  NODE: 3,
  SYS: 3,
};

/** The SMP links of the catalog (NCCL src/graph/topo.h per-CPU constants, GB/s for GPU traffic). */
export const smpLinks = {
  /** Broadwell QPI: BDW_QPI_BW 6.0. */
  broadwell: { label: 'QPI (Broadwell)', GBps: 6, source: 'NCCL src/graph/topo.h BDW_QPI_BW 6.0' },
  /** Skylake / Cascade Lake UPI: SKL_QPI_BW 10.0. */
  skylake: { label: 'UPI (Skylake)', GBps: 10, source: 'NCCL src/graph/topo.h SKL_QPI_BW 10.0' },
  /** Sapphire Rapids UPI: SRP_QPI_BW 22.0. */
  sapphireRapids: { label: 'UPI (Sapphire Rapids)', GBps: 22, source: 'NCCL src/graph/topo.h SRP_QPI_BW 22.0' },
  /** Emerald Rapids UPI: ERP_QPI_BW 40.0. */
  emeraldRapids: { label: 'UPI (Emerald Rapids)', GBps: 40, source: 'NCCL src/graph/topo.h ERP_QPI_BW 40.0' },
  /** AMD Infinity Fabric between sockets: AMD_BW 16.0 (Zen 1/2 in newer NCCL: AMD_ZEN12_BW 16.0). */
  amd: { label: 'Infinity Fabric (AMD)', GBps: 16, source: 'NCCL src/graph/topo.h AMD_BW 16.0' },
} as const satisfies Record<string, SmpLink>;

/**
 * NVLink per link per direction, as NCCL prices it (src/graph/topo.h): SM70 (V100) and SM80
 * (A100) 20.0, SM90 (H100/H200) 20.6, SM100 (B200) 40.1 GB/s. Times the links per GPU they give
 * the catalog's ring figures: 6 × 20 = 120 (V100), 12 × 20 = 240 (A100), 18 × 20.6 ≈ 370 (H100).
 */
export const nvlinkPerLinkGBps = { volta: 20, ampere: 20, hopper: 20.6, blackwell: 40.1 } as const;

/** The path kind between two GPUs of `n` from its structure (sockets, switches, bridges, NVLinks). */
export function derivedKind(
  n: Pick<NodeTopology, 'socketOf' | 'switchOf' | 'bridgeOf'>,
  i: number,
  j: number,
  rootComplexOf: (gpu: number) => number = (g) => n.socketOf[g]!,
): PathKind {
  const si = n.switchOf[i]!;
  const sj = n.switchOf[j]!;
  if (si !== null && si === sj) return 'PIX';
  if (si !== null && sj !== null && n.bridgeOf[si] === n.bridgeOf[sj]) return 'PXB';
  if (n.socketOf[i] !== n.socketOf[j]) return 'SYS';
  return rootComplexOf(i) === rootComplexOf(j) ? 'PHB' : 'NODE';
}

/** The nvidia-smi spelling of a cell: "NV4", "PIX", … */
export const cellText = (c: PathCell): string => (c.kind === 'NV' ? `NV${c.nvlinks}` : c.kind);

/** The matrix as `nvidia-smi topo -m` prints its GPU block (tab-separated, "X" on the diagonal). */
export function formatMatrix(n: NodeTopology): string {
  const head = ['', ...Array.from({ length: n.gpus }, (_, j) => `GPU${j}`), 'Socket', 'Switch', 'NIC'];
  const rows = n.matrix.map((row, i) => [
    `GPU${i}`,
    ...row.map((c, j) => (i === j ? ' X ' : cellText(c))),
    String(n.socketOf[i]),
    n.switchOf[i] === null ? '-' : String(n.switchOf[i]),
    n.nics[n.nicOf[i]!]?.name ?? '-',
  ]);
  return [head, ...rows].map((r) => r.join('\t')).join('\n');
}

/** Whether two GPUs of `n` talk over NVLink. */
export const nvlinked = (n: NodeTopology, i: number, j: number): boolean => n.matrix[i]![j]!.kind === 'NV';

/** The nearest NIC of each GPU: best path kind; GPUs tied on the same NICs take them in turn (rails). */
export function nearestNics(gpus: number, nicKind: (gpu: number, nic: number) => PathKind, nics: number): number[] {
  if (nics === 0) return new Array<number>(gpus).fill(-1);
  const bestSets = Array.from({ length: gpus }, (_, g) => {
    const ranks = Array.from({ length: nics }, (_, k) => pathKinds.indexOf(nicKind(g, k)));
    const m = Math.min(...ranks);
    return ranks.flatMap((r, k) => (r === m ? [k] : []));
  });
  return bestSets.map((best, g) => {
    const peers = bestSets.flatMap((b, h) => (b.join() === best.join() ? [h] : []));
    return best[peers.indexOf(g) % best.length]!;
  });
}
