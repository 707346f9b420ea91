import { ringNodeScale } from '../../hardware/ring-node-scaling.ts';
import { ncclRingChannels } from '../../hardware/nccl-ring-channels.ts';
import type { Interconnect } from '../../hardware/interconnect.ts';
import type { SystemSpec } from '../../hardware/systems.ts';
import { hopAlphaUs, intelP2pOverhead, pcieGBps, type NodeTopology, type PathKind } from '../../hardware/topology.ts';
import { groupKinds, type GroupKind, type Placement, type ProcessGroups } from './placement.ts';

/**
 * Group rings priced on the links they cross.
 *
 * Each physical link direction is a resource of capacity C (GB/s): a GPU's PCIe port, a PCIe
 * switch's uplink, the SMP link between two sockets, NVLink (a pair's bonded links, or a GPU's
 * port into the NVSwitch fabric), a NIC's port. A ring of a group (its members node by node in
 * rank order, each node's in the order NCCL's ring search would take: ringOrder; hop
 * m_i → m_{i+1 mod t}) sends every hop over the links of its path (topology.ts). The groups of one
 * kind communicate at the same time (every TP group runs the same layer's collective), so a link
 * direction carrying n hops of that kind gives each C/n. Hops leaving a node split over the
 * distinct NICs of the group's members on that node (NCCL runs one ring per NIC), so a group with
 * k members per node gets k NICs, as groupLink does.
 *
 *   hop bandwidth  = min over its links of C_e · w / load_e   (w: the hop's share on e)
 *   ring bus B     = min over the ring's hops; α = max over its hops (topology.ts hopAlphaUs; the
 *                    network's α between nodes)
 *   kind's link    = the slowest group of the kind (the step waits for it)
 */
export interface PhysicalLink {
  /** Stable id, one per direction: "n0:gpu3:up", "n0:smp:0>1", "n1:nic2:out", … */
  readonly id: string;
  readonly node: number;
  readonly what: 'gpu-port' | 'uplink' | 'smp' | 'nvlink' | 'nvswitch-port' | 'nic';
  readonly label: string;
  readonly capacityGBps: number;
}

/** One hop's links: each a set of parallel links the hop's bytes split over (weights sum to 1). */
interface Hop {
  readonly from: number;
  readonly to: number;
  readonly kind: PathKind | 'NET';
  readonly segments: readonly (readonly { readonly link: PhysicalLink; readonly w: number }[])[];
}

/** A group's ring on the machine: its hops, bandwidth, α and the hop that bounds it. */
export interface PricedRing {
  readonly members: readonly number[];
  readonly gpus: readonly number[];
  readonly busGBps: number;
  readonly alphaUs: number;
  /** The hop with the least bandwidth: GPUs, path kind, how many hops share its tightest link. */
  readonly slowest: {
    readonly from: number;
    readonly to: number;
    readonly kind: PathKind | 'NET';
    readonly sharedBy: number;
  };
  readonly hops: readonly Hop[];
}

/** Every group of one kind priced, and the kind's link (its slowest group). */
export interface PricedKind {
  readonly kind: GroupKind;
  readonly rings: readonly PricedRing[];
  readonly link: Interconnect;
  /** Hops of this kind per link id (w summed): what the kind puts on each link at once. */
  readonly load: ReadonlyMap<string, number>;
}

/** The machine the placement runs on: the node topology × nodes, and the system's network. */
export interface PlacedMachine {
  readonly system: SystemSpec;
  readonly node: NodeTopology;
  readonly nodes: number;
}

/** The physical links of node `n` a hop from local GPU a to b crosses (one direction). */
function intraPath(m: PlacedMachine, n: number, a: number, b: number): { kind: PathKind; links: PhysicalLink[] } {
  const t = m.node;
  const cell = t.matrix[a]![b]!;
  const pcie = pcieGBps(t.pcieGen);
  const rc = t.intelRootComplex ? pcie / intelP2pOverhead : pcie;
  const L = (id: string, what: PhysicalLink['what'], label: string, capacityGBps: number): PhysicalLink => ({
    id: `n${n}:${id}`,
    node: n,
    what,
    label,
    capacityGBps,
  });
  if (cell.kind === 'NV' && t.nvlink) {
    const nv = t.nvlink;
    if (nv.switched) {
      const port = nv.linksPerGpu * nv.perLinkGBps;
      return {
        kind: 'NV',
        links: [
          L(`nvport${a}:out`, 'nvswitch-port', `GPU${a} → NVSwitch`, port),
          L(`nvport${b}:in`, 'nvswitch-port', `NVSwitch → GPU${b}`, port),
        ],
      };
    }
    return {
      kind: 'NV',
      links: [L(`nvl:${a}>${b}`, 'nvlink', `GPU${a} → GPU${b} NV${cell.nvlinks}`, cell.nvlinks * nv.perLinkGBps)],
    };
  }
  const sa = t.switchOf[a]!;
  const sb = t.switchOf[b]!;
  const links: PhysicalLink[] = [];
  const viaRoot = !(sa !== null && sa === sb) && !(sa !== null && sb !== null && t.bridgeOf[sa] === t.bridgeOf[sb]);
  // Up from a.
  if (sa !== null) {
    links.push(L(`gpu${a}:up`, 'gpu-port', `GPU${a} → switch ${sa}`, pcie));
    if (sa !== sb)
      links.push(
        L(`sw${sa}:up`, 'uplink', `switch ${sa} → ${viaRoot ? `CPU${t.socketOf[a]}` : 'bridge'}`, viaRoot ? rc : pcie),
      );
  } else links.push(L(`gpu${a}:up`, 'gpu-port', `GPU${a} → CPU${t.socketOf[a]}`, rc));
  if (t.socketOf[a] !== t.socketOf[b]) {
    if (!(t.smp.GBps > 0))
      throw new Error(`${t.label}: GPU${a} → GPU${b} crosses sockets, and no SMP link is modelled.`);
    const [x, y] = [t.socketOf[a]!, t.socketOf[b]!];
    links.push(L(`smp:${x}>${y}`, 'smp', `CPU${x} → CPU${y} (${t.smp.label})`, t.smp.GBps));
  }
  // Down to b.
  if (sb !== null) {
    if (sa !== sb)
      links.push(
        L(
          `sw${sb}:down`,
          'uplink',
          `${viaRoot ? `CPU${t.socketOf[b]}` : 'bridge'} → switch ${sb}`,
          viaRoot ? rc : pcie,
        ),
      );
    links.push(L(`gpu${b}:down`, 'gpu-port', `switch ${sb} → GPU${b}`, pcie));
  } else links.push(L(`gpu${b}:down`, 'gpu-port', `CPU${t.socketOf[b]} → GPU${b}`, rc));
  return { kind: cell.kind === 'NV' ? 'PHB' : cell.kind, links };
}

/** A NIC port of node n, one direction. */
const nicLink = (m: PlacedMachine, n: number, k: number, dir: 'out' | 'in'): PhysicalLink => ({
  id: `n${n}:nic${k}:${dir}`,
  node: n,
  what: 'nic',
  label: `node ${n} ${m.node.nics[k]?.name ?? `NIC${k}`} ${dir === 'out' ? '→ network' : '← network'}`,
  capacityGBps: m.system.inter.nicGBps,
});

/** Nominal GB/s of the path between local GPUs a and b, before sharing (what NCCL's ring search ranks paths by). */
function pathGBps(t: NodeTopology, a: number, b: number): number {
  const cell = t.matrix[a]![b]!;
  const pcie = pcieGBps(t.pcieGen);
  const rc = t.intelRootComplex ? pcie / intelP2pOverhead : pcie;
  switch (cell.kind) {
    case 'NV':
      return t.nvlink ? (t.nvlink.switched ? t.nvlink.linksPerGpu : cell.nvlinks) * t.nvlink.perLinkGBps : rc;
    case 'PIX':
    case 'PXB':
      return pcie;
    case 'PHB':
    case 'NODE':
      return rc;
    case 'SYS':
      return Math.min(rc, t.smp.GBps);
  }
}

/** Largest node-local segment whose ring order is searched (7! orders). */
const searchedMembers = 8;

/**
 * The order NCCL's ring search would take through one node's members (src/graph/search.cc looks
 * for rings over the fastest paths): of all orders starting at the first member, the one whose
 * slowest hop is fastest, then with the fewest hops at that speed, then the fastest in sum.
 * `cycle`: the segment closes on itself (the whole group on this node).
 */
function ringOrder(t: NodeTopology, locals: readonly number[], cycle: boolean): number[] {
  if (locals.length <= 2 || locals.length > searchedMembers) return [...locals];
  const score = (o: readonly number[]): [number, number, number] => {
    const hops = o
      .slice(cycle ? 0 : 1)
      .map((g, i) => (cycle ? pathGBps(t, g, o[(i + 1) % o.length]!) : pathGBps(t, o[i]!, g)));
    const min = Math.min(...hops);
    return [min, -hops.filter((h) => h === min).length, hops.reduce((a, h) => a + h, 0)];
  };
  const better = (x: [number, number, number], y: [number, number, number]): boolean =>
    x[0] !== y[0] ? x[0] > y[0] : x[1] !== y[1] ? x[1] > y[1] : x[2] > y[2] + 1e-9;
  let best = [...locals];
  let bestScore = score(best);
  const rest = locals.slice(1);
  const permute = (done: number[], left: number[]): void => {
    if (left.length === 0) {
      const cand = [locals[0]!, ...done];
      const sc = score(cand);
      if (better(sc, bestScore)) [best, bestScore] = [cand, sc];
      return;
    }
    left.forEach((g, i) => permute([...done, g], [...left.slice(0, i), ...left.slice(i + 1)]));
  };
  permute([], rest);
  return best;
}

/** The group's GPUs in ring order: node by node as the ranks come, each node's members in NCCL's ring order. */
function ringGpus(m: PlacedMachine, gpus: readonly number[]): number[] {
  const G = m.node.gpus;
  const nodesInOrder = [...new Set(gpus.map((g) => Math.floor(g / G)))];
  const oneNode = nodesInOrder.length === 1;
  return nodesInOrder.flatMap((n) => {
    const locals = gpus.filter((g) => Math.floor(g / G) === n).map((g) => g % G);
    return ringOrder(m.node, locals, oneNode).map((l) => n * G + l);
  });
}

/** The ring hops of one group on the machine (members in rank order, each node's in NCCL's ring order). */
function ringHops(m: PlacedMachine, p: Placement, members: readonly number[]): Hop[] {
  const G = m.node.gpus;
  const gpus = ringGpus(
    m,
    members.map((r) => p.gpuOf[r]!),
  );
  const nicsOn = (n: number): number[] => [
    ...new Set(gpus.filter((g) => Math.floor(g / G) === n).map((g) => Math.max(0, m.node.nicOf[g % G]!))),
  ];
  const hops: Hop[] = [];
  const t = gpus.length;
  for (let i = 0; i < (t === 2 ? 2 : t); i++) {
    const a = gpus[i]!;
    const b = gpus[(i + 1) % t]!;
    const [na, nb] = [Math.floor(a / G), Math.floor(b / G)];
    if (na === nb) {
      const { kind, links } = intraPath(m, na, a % G, b % G);
      hops.push({ from: a, to: b, kind, segments: links.map((link) => [{ link, w: 1 }]) });
    } else {
      if (m.node.nics.length === 0) throw new Error(`${m.node.label}: no NIC, so no GPU reaches another node.`);
      const out = nicsOn(na);
      const inn = nicsOn(nb);
      hops.push({
        from: a,
        to: b,
        kind: 'NET',
        segments: [
          out.map((k) => ({ link: nicLink(m, na, k, 'out'), w: 1 / out.length })),
          inn.map((k) => ({ link: nicLink(m, nb, k, 'in'), w: 1 / inn.length })),
        ],
      });
    }
  }
  return hops;
}

/** Prices every group of one kind, all communicating at once. */
export function priceKind(
  m: PlacedMachine,
  p: Placement,
  kind: GroupKind,
  groups: readonly (readonly number[])[],
): PricedKind {
  const rings = groups.filter((g) => g.length > 1).map((g) => ({ members: g, hops: ringHops(m, p, g) }));
  const load = new Map<string, number>();
  for (const r of rings)
    for (const h of r.hops)
      for (const seg of h.segments) for (const { link, w } of seg) load.set(link.id, (load.get(link.id) ?? 0) + w);
  const G = m.node.gpus;
  const priced: PricedRing[] = rings.map(({ members, hops }) => {
    // A ring across n nodes runs its network hops at the bus bandwidth measured for n nodes (ring-node-scaling.ts), as groupLink does.
    const netScale = ringNodeScale(new Set(hops.map((h) => Math.floor(h.from / G))).size);
    let busGBps = Infinity;
    let alphaUs = 0;
    let slowest: PricedRing['slowest'] = { from: -1, to: -1, kind: 'NV', sharedBy: 1 };
    for (const h of hops) {
      let hopGBps = Infinity;
      let sharedBy = 1;
      for (const seg of h.segments) {
        const bw = seg.reduce((a, { link, w }) => a + (link.capacityGBps * w) / load.get(link.id)!, 0);
        if (bw < hopGBps) {
          hopGBps = bw;
          sharedBy = Math.round(Math.max(...seg.map(({ link, w }) => load.get(link.id)! / w)));
        }
      }
      if (h.kind === 'NET') hopGBps *= netScale;
      if (hopGBps < busGBps) {
        busGBps = hopGBps;
        slowest = { from: h.from, to: h.to, kind: h.kind, sharedBy };
      }
      alphaUs = Math.max(alphaUs, h.kind === 'NET' ? m.system.inter.alphaUs : hopAlphaUs[h.kind]);
    }
    return { members, gpus: members.map((r) => p.gpuOf[r]!), busGBps, alphaUs, slowest, hops };
  });
  const worst = priced.reduce<PricedRing | undefined>((a, r) => (!a || r.busGBps < a.busGBps ? r : a), undefined);
  // NCCL's channels as groupLink's: a ring across nodes those its ranks per node get (nccl-ring-channels.ts), one inside a node the intra link's.
  const nodes = worst ? new Set(worst.gpus.map((g) => Math.floor(g / G))).size : 1;
  const { inter, intra } = m.system;
  const channels =
    nodes > 1
      ? ncclRingChannels(m.system.gpu.arch, Math.ceil(worst!.members.length / nodes), inter.nicsPerNode, inter.nicGBps)
      : intra.ncclChannels;
  const link: Interconnect = worst
    ? {
        ...(channels !== undefined && { ncclChannels: channels }),
        name: `placed-${kind}`,
        label: `${kindLabels[kind]} ring on ${p.name}: slowest hop GPU${worst.slowest.from}→GPU${worst.slowest.to} (${worst.slowest.kind}${worst.slowest.sharedBy > 1 ? `, link shared by ${worst.slowest.sharedBy}` : ''}), ${fmt(worst.busGBps)} GB/s`,
        alphaUs: Math.max(...priced.map((r) => r.alphaUs)),
        busGBps: worst.busGBps,
        source: `${m.node.source}; ${m.system.inter.source}`,
      }
    : {
        name: `placed-${kind}`,
        label: `no ${kindLabels[kind]} group of 2 or more`,
        alphaUs: 0,
        busGBps: Infinity,
        source: m.node.source,
      };
  return { kind, rings: priced, link, load };
}

const fmt = (x: number): string => (x >= 100 ? x.toFixed(0) : x.toPrecision(3));

/** What each group kind is, for labels. */
export const kindLabels: Readonly<Record<GroupKind, string>> = {
  tp: 'TP',
  cp: 'CP',
  dpCp: 'DP×CP gradient',
  pp: 'pipeline p2p',
  embedding: 'tied-embedding',
};

/** Every group kind priced under the placement. */
export function priceGroups(m: PlacedMachine, p: Placement, groups: ProcessGroups): Record<GroupKind, PricedKind> {
  const out = {} as Record<GroupKind, PricedKind>;
  for (const k of groupKinds) out[k] = priceKind(m, p, k, groups[k]);
  return out;
}

/** The links a placement gives each group kind, in the shape Machine.placed takes. */
export function placedLinks(priced: Record<GroupKind, PricedKind>): Record<GroupKind, Interconnect> {
  const out = {} as Record<GroupKind, Interconnect>;
  for (const k of groupKinds) out[k] = priced[k].link;
  return out;
}

/** Every physical link any priced kind uses, by id. */
export function linksUsed(priced: Record<GroupKind, PricedKind>): Map<string, PhysicalLink> {
  const out = new Map<string, PhysicalLink>();
  for (const k of groupKinds)
    for (const r of priced[k].rings)
      for (const h of r.hops) for (const seg of h.segments) for (const { link } of seg) out.set(link.id, link);
  return out;
}
