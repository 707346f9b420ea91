import { quoted } from '../core/quote.ts';
import type { GpuArch } from './gpus.ts';
import {
  nearestNics,
  nvlinkPerLinkGBps,
  smpLinks,
  type NicSpec,
  type NodeTopology,
  type PathCell,
  type PathKind,
  type SmpLink,
} from './topology.ts';

/** What `nvidia-smi topo -m` does not print and the parser therefore takes from the machine. */
export interface TopoAssumptions {
  /** The GPUs' generation: NVLink GB/s per link (topology.ts nvlinkPerLinkGBps) and the PCIe generation. */
  readonly arch: GpuArch;
  /** The inter-socket link (default: Skylake UPI, NCCL's SKL_QPI_BW). */
  readonly smp?: SmpLink;
  /** Whether the root complex is Intel's (P2P through it costs 6/5; default true). */
  readonly intelRootComplex?: boolean;
}

/** The matrix as printed: device names, cells, and the affinity columns. */
interface RawMatrix {
  readonly devices: readonly string[];
  readonly cells: readonly (readonly string[])[];
  readonly cpuAffinity: readonly (string | undefined)[];
  readonly numaAffinity: readonly (string | undefined)[];
  readonly nicNames: ReadonlyMap<string, string>;
}

const kindOf = (cell: string): PathCell | undefined => {
  const nv = /^NV(\d+)$/.exec(cell);
  if (nv) return { kind: 'NV', nvlinks: Number(nv[1]) };
  return (['PIX', 'PXB', 'PHB', 'NODE', 'SYS'] as const).includes(cell as never)
    ? { kind: cell as PathKind, nvlinks: 0 }
    : undefined;
};

const fail = (what: string): never => {
  throw new Error(`nvidia-smi topo -m: ${what}`);
};

/** The header, the device rows and the NIC legend of a pasted output. */
function readMatrix(text: string): RawMatrix {
  const lines = text.split(/\r?\n/);
  const headerAt = lines.findIndex((l) => {
    const t = l.trim().split(/\s+/);
    return t[0] === 'GPU0' && t[1] !== 'X';
  });
  if (headerAt < 0)
    fail('no header line with a GPU0 column: paste the whole output, from the header line (GPU0 GPU1 …) on.');
  const header = lines[headerAt]!.trim().split(/\s+/);
  const cpuAt = header.indexOf('CPU');
  const devices = cpuAt < 0 ? header : header.slice(0, cpuAt);
  if (devices.some((d) => !/^(GPU\d+|NIC\d+|mlx\d+_\d+|[A-Za-z]+\d*_?\d*)$/.test(d)))
    fail(`the header ${quoted(lines[headerAt]!.trim(), 60)} does not list devices (GPU0 GPU1 … NIC0 …).`);
  const hasCpu = cpuAt >= 0;
  const hasNuma = hasCpu && header.slice(cpuAt).join(' ').includes('NUMA Affinity');
  const cells: string[][] = [];
  const cpuAffinity: (string | undefined)[] = [];
  const numaAffinity: (string | undefined)[] = [];
  for (let r = 0; r < devices.length; r++) {
    const line = lines.slice(headerAt + 1).find((l) => l.trim().split(/\s+/)[0] === devices[r]);
    if (line === undefined)
      fail(`the header lists ${devices[r]} but no row starts with it: paste the whole matrix (one row per device).`);
    const tokens = line!.trim().split(/\s+/).slice(1);
    if (tokens.length < devices.length)
      fail(
        `row ${devices[r]} has ${tokens.length} cells, the header ${devices.length} devices: a row was cut or wrapped.`,
      );
    cells.push(tokens.slice(0, devices.length));
    const rest = tokens.slice(devices.length);
    cpuAffinity.push(hasCpu ? rest[0] : undefined);
    numaAffinity.push(hasNuma ? rest[1] : undefined);
  }
  const nicNames = new Map<string, string>();
  for (const l of lines) {
    const m = /^\s*(NIC\d+):\s*(\S+)\s*$/.exec(l);
    if (m) nicNames.set(m[1]!, m[2]!);
  }
  return { devices, cells, cpuAffinity, numaAffinity, nicNames };
}

/** Union-find components of n items under `same`, numbered in order of first appearance. */
function components(n: number, same: (i: number, j: number) => boolean): number[] {
  const parent = Array.from({ length: n }, (_, i) => i);
  const find = (i: number): number => (parent[i] === i ? i : (parent[i] = find(parent[i]!)));
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) if (same(i, j)) parent[find(j)] = find(i);
  const ids = new Map<number, number>();
  return parent.map((_, i) => {
    const root = find(i);
    if (!ids.has(root)) ids.set(root, ids.size);
    return ids.get(root)!;
  });
}

/**
 * A node topology from the text `nvidia-smi topo -m` prints (tabs or spaces, with or without the
 * legend, NIC rows, CPU/NUMA affinity columns). Sockets: the NUMA affinity column, else the CPU
 * affinity column, else the GPUs not SYS apart; PCIe switches: devices PIX apart; upper bridges:
 * switches PXB apart. Throws naming the row and column of what is wrong.
 */
export function parseTopoMatrix(text: string, assume: TopoAssumptions, label = 'nvidia-smi topo -m'): NodeTopology {
  const raw = readMatrix(text);
  const gpuIdx = raw.devices.flatMap((d, i) => (/^GPU\d+$/.test(d) ? [i] : []));
  const nicIdx = raw.devices.flatMap((d, i) => (/^GPU\d+$/.test(d) ? [] : [i]));
  if (gpuIdx.length === 0) fail('the header has no GPU columns.');
  gpuIdx.forEach((d, g) => {
    if (raw.devices[d] !== `GPU${g}`) fail(`GPU columns must be GPU0, GPU1, … in order; found ${raw.devices[d]}.`);
  });
  const cell = (i: number, j: number): PathCell => {
    const text = raw.cells[i]![j]!;
    if (i === j) {
      if (text !== 'X') fail(`row ${raw.devices[i]}: the diagonal cell is ${quoted(text)}, expected X.`);
      return { kind: 'PIX', nvlinks: 0 };
    }
    const c = kindOf(text);
    if (!c)
      fail(
        `row ${raw.devices[i]}, column ${raw.devices[j]}: ${quoted(text)} is not a link kind (X, NV#, PIX, PXB, PHB, NODE or SYS).`,
      );
    return c!;
  };
  const n = raw.devices.length;
  const all = Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => cell(i, j)));
  for (let i = 0; i < n; i++)
    for (let j = i + 1; j < n; j++) {
      const a = raw.cells[i]![j]!;
      const b = raw.cells[j]![i]!;
      if (a !== b)
        fail(
          `${raw.devices[i]}→${raw.devices[j]} is ${a} but ${raw.devices[j]}→${raw.devices[i]} is ${b}: the matrix must be symmetric.`,
        );
    }
  const gpus = gpuIdx.length;
  const matrix = gpuIdx.map((i) => gpuIdx.map((j) => all[i]![j]!));

  // Sockets: NUMA affinity, else CPU affinity, else "not SYS apart" over the PCIe kinds.
  const numa = gpuIdx.map((i) => raw.numaAffinity[i]);
  const cpu = gpuIdx.map((i) => raw.cpuAffinity[i]);
  const byColumn = (col: readonly (string | undefined)[]): number[] | undefined =>
    col.every((v) => v !== undefined && v !== 'N/A') ? components(gpus, (i, j) => col[i] === col[j]) : undefined;
  const socketOf =
    byColumn(numa) ??
    byColumn(cpu) ??
    components(gpus, (i, j) => matrix[i]![j]!.kind !== 'SYS' && matrix[i]![j]!.kind !== 'NV');

  // PCIe switches over GPUs and NICs: devices PIX apart share one.
  const sw = components(n, (i, j) => all[i]![j]!.kind === 'PIX');
  const size = (c: number): number => sw.filter((x) => x === c).length;
  const switchIds = [...new Set(sw.filter((c) => size(c) > 1))];
  const switchOfDevice = sw.map((c) => (size(c) > 1 ? switchIds.indexOf(c) : null));
  const bridgeOf = components(switchIds.length, (a, b) =>
    raw.devices.some(
      (_, i) =>
        switchOfDevice[i] === a && raw.devices.some((__, j) => switchOfDevice[j] === b && all[i]![j]!.kind === 'PXB'),
    ),
  );
  const nics: NicSpec[] = nicIdx.map((i) => {
    const near = gpuIdx.find((g) => all[i]![g]!.kind !== 'SYS');
    return {
      name: raw.nicNames.get(raw.devices[i]!) ?? raw.devices[i]!,
      socket: near === undefined ? 0 : socketOf[gpuIdx.indexOf(near)]!,
      pcieSwitch: switchOfDevice[i]!,
    };
  });
  const offDiagonal = matrix.flatMap((row, i) => row.filter((_, j) => j !== i));
  const switched = gpus > 1 && offDiagonal.every((c) => c.kind === 'NV' && c.nvlinks === offDiagonal[0]!.nvlinks);
  const anyNv = offDiagonal.some((c) => c.kind === 'NV');
  const perLink = nvlinkPerLinkGBps[assume.arch];
  const linksPerGpu = switched
    ? offDiagonal[0]!.nvlinks
    : Math.max(...matrix.map((row) => row.reduce((a, c) => a + c.nvlinks, 0)));
  const pcieGen = ({ volta: 3, ampere: 4, hopper: 5, blackwell: 5 } as const)[assume.arch];
  return {
    label: `${label}: ${gpus} GPUs, ${nics.length} NICs, ${Math.max(...socketOf) + 1} sockets`,
    gpus,
    sockets: Math.max(...socketOf) + 1,
    socketOf,
    switchOf: gpuIdx.map((i) => switchOfDevice[i]!),
    bridgeOf,
    matrix,
    nics,
    nicOf: nearestNics(gpus, (g, k) => all[gpuIdx[g]!]![nicIdx[k]!]!.kind, nics.length),
    pcieGen,
    intelRootComplex: assume.intelRootComplex ?? true,
    smp: assume.smp ?? smpLinks.skylake,
    nvlink: anyNv
      ? {
          perLinkGBps: perLink,
          linksPerGpu,
          switched,
          source: `NCCL src/graph/topo.h: ${perLink} GB/s per NVLink (${assume.arch})`,
        }
      : undefined,
    source: `${label} (parsed); PCIe Gen${pcieGen} from the GPU generation, ${(assume.smp ?? smpLinks.skylake).label} assumed between sockets`,
  };
}
