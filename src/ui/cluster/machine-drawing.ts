// D3 drawing of a machine: sockets, PCIe switches, GPUs, NICs, NVLink, nodes; GPUs coloured by TP group, links by load.
import * as d3 from 'd3';
import type { NodeTopology } from '../../hardware/topology.ts';
import type { GroupKind } from '../../projection/links/placement.ts';
import { kindLabels } from '../../projection/links/placement-links.ts';
import type { LinkLoad } from '../../projection/studies/placement-step.ts';

/** What the drawing shows: one node's topology × nodes, where each rank sits, and every link's load. */
export interface MachineDrawingInput {
  readonly node: NodeTopology;
  readonly nodes: number;
  /** [rank]: global GPU. */
  readonly gpuOf: readonly number[];
  /** [rank]: the index of its TP group (the colour). */
  readonly tpGroupOf: readonly number[];
  readonly loads: readonly LinkLoad[];
}

/** Colours of the group kinds on the links (the link's heaviest kind). */
export const kindColors: Readonly<Record<GroupKind, string>> = {
  tp: '#2f6fb0',
  cp: '#8e44ad',
  dpCp: '#d0622b',
  pp: '#2a9d8f',
  embedding: '#6b7280',
};

/** The drawing's width in user units (the SVG scales to its box). */
const W = 1000;
const gpuColors = d3.schemeTableau10;

/** A drawn link: both directions of one physical link summed. */
interface Segment {
  readonly key: string;
  readonly bytes: number;
  readonly exposed: number;
  readonly byKind: Partial<Record<GroupKind, number>>;
  readonly label: string;
  readonly capacityGBps: number;
}

/** The undirected segment a physical link id belongs to ("n0:gpu3:up" → "n0:gpu3", "n0:smp:1>0" → "n0:smp:0-1"). */
function segmentKey(id: string): string {
  const [n, what, dir] = id.split(':') as [string, string, string?];
  const pair = /^(\d+)>(\d+)$/.exec(dir ?? '');
  if (pair) {
    const [a, b] = [Number(pair[1]), Number(pair[2])].sort((x, y) => x - y);
    return `${n}:${what}:${a}-${b}`;
  }
  return `${n}:${what}`;
}

function segments(loads: readonly LinkLoad[]): Map<string, Segment> {
  const out = new Map<string, Segment>();
  for (const l of loads) {
    const key = segmentKey(l.link.id);
    const prev = out.get(key);
    const byKind: Partial<Record<GroupKind, number>> = { ...(prev?.byKind ?? {}) };
    for (const [k, v] of Object.entries(l.bytesPerStep) as [GroupKind, number][]) byKind[k] = (byKind[k] ?? 0) + v;
    out.set(key, {
      key,
      bytes: (prev?.bytes ?? 0) + l.totalBytesPerStep,
      exposed: (prev?.exposed ?? 0) + l.exposedBytesPerStep,
      byKind,
      label: prev ? `${prev.label}; ${l.link.label}` : l.link.label,
      capacityGBps: l.link.capacityGBps,
    });
  }
  return out;
}

const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(bytes >= 1e8 ? 0 : 1)} MB`;

/** Draws the machine into `svg` (replacing what was there). */
export function drawMachine(svg: SVGSVGElement, d: MachineDrawingInput): void {
  const { node, nodes } = d;
  const shown = Math.min(nodes, 2);
  const summarized = nodes > 2;
  const net = nodes > 1;
  const top = net ? 46 : 8;
  const nodeH = node.nvlink ? 250 : 200;
  const height = top + shown * nodeH + (summarized ? 70 : 0) + 10;
  const root = d3.select(svg).attr('viewBox', `0 0 ${W} ${height}`).attr('role', 'img');
  root.selectAll('*').remove();
  root.append('title').text(`${node.label}${nodes > 1 ? `, ${nodes} nodes` : ''}`);
  const seg = segments(d.loads);
  const maxBytes = Math.max(1, ...[...seg.values()].map((s) => s.bytes));
  const rankOf = new Map(d.gpuOf.map((g, r) => [g, r]));
  const G = node.gpus;
  const small = G > 16;

  const linkG = root.append('g').attr('data-layer', 'links');
  const boxG = root.append('g').attr('data-layer', 'boxes');

  /** One link line with its load: width ∝ bytes per step, colour its heaviest group kind. */
  const link = (key: string, path: string, labelAt?: [number, number]): void => {
    const s = seg.get(key);
    const heaviest = s
      ? (Object.entries(s.byKind) as [GroupKind, number][]).reduce((a, b) => (b[1] > a[1] ? b : a))[0]
      : undefined;
    const p = linkG
      .append('path')
      .attr('d', path)
      .attr('fill', 'none')
      .attr('data-link', key)
      .attr('data-bytes', s ? String(Math.round(s.bytes)) : '0')
      .attr('stroke', heaviest ? kindColors[heaviest] : '#c4cad3')
      .attr('stroke-width', s ? 1.5 + (7 * s.bytes) / maxBytes : 1.2);
    if (s) {
      const parts = (Object.entries(s.byKind) as [GroupKind, number][]).map(([k, v]) => `${kindLabels[k]} ${mb(v)}`);
      p.append('title').text(
        `${s.label}\n${s.capacityGBps.toPrecision(3)} GB/s per direction\nper step: ${parts.join(', ')}; exposed ${mb(s.exposed)}`,
      );
      if (labelAt && !small && s.bytes >= 0.5 * maxBytes)
        linkG
          .append('text')
          .attr('x', labelAt[0])
          .attr('y', labelAt[1])
          .attr('font-size', 12)
          .attr('fill', '#111')
          .attr('paint-order', 'stroke')
          .attr('stroke', '#fff')
          .attr('stroke-width', 3)
          .attr('text-anchor', 'middle')
          .text(mb(s.bytes));
    }
  };
  const box = (x: number, y: number, w: number, h: number, text: string, fill: string, data: string): void => {
    const g = boxG.append('g').attr('data-box', data);
    g.append('rect')
      .attr('x', x - w / 2)
      .attr('y', y - h / 2)
      .attr('width', w)
      .attr('height', h)
      .attr('rx', 5)
      .attr('fill', fill)
      .attr('stroke', '#2a4a7a');
    if (text)
      g.append('text')
        .attr('x', x)
        .attr('y', y + 4)
        .attr('font-size', 12)
        .attr('text-anchor', 'middle')
        .attr('fill', '#111')
        .text(text);
  };

  if (net) box(W / 2, 22, W - 40, 26, `network: ${nodes} nodes`, '#f3f4f6', 'network');

  for (let n = 0; n < shown; n++) {
    const oy = top + n * nodeH;
    const xs = Array.from({ length: G }, (_, g) => 30 + ((g + 0.5) * (W - 60)) / G);
    const yCpu = oy + 34;
    const yNic = oy + 74;
    const ySw = oy + 112;
    const yGpu = oy + 164;
    const yNv = oy + 218;
    boxG
      .append('text')
      .attr('x', 8)
      .attr('y', oy + 12)
      .attr('font-size', 13)
      .attr('font-weight', 600)
      .attr('fill', '#0b2b55')
      .text(nodes > 1 ? `node ${n}` : node.label);
    const mean = (gs: number[]): number => gs.reduce((a, g) => a + xs[g]!, 0) / gs.length;
    const cpuX = Array.from({ length: node.sockets }, (_, s) =>
      mean(xs.map((_, g) => g).filter((g) => node.socketOf[g] === s)),
    );
    const switches = Math.max(-1, ...node.switchOf.map((s) => s ?? -1)) + 1;
    const swX = Array.from({ length: switches }, (_, k) => {
      const gs = xs.map((_, g) => g).filter((g) => node.switchOf[g] === k);
      return gs.length ? mean(gs) : cpuX[node.nics.find((c) => c.pcieSwitch === k)?.socket ?? 0]!;
    });
    const swSocket = (k: number): number => {
      const g = node.switchOf.findIndex((s) => s === k);
      return g >= 0 ? node.socketOf[g]! : (node.nics.find((c) => c.pcieSwitch === k)?.socket ?? 0);
    };
    // Sockets and the SMP link.
    for (let s = 0; s + 1 < node.sockets; s++)
      link(`n${n}:smp:${s}-${s + 1}`, `M${cpuX[s]},${yCpu}L${cpuX[s + 1]},${yCpu}`, [
        (cpuX[s]! + cpuX[s + 1]!) / 2,
        yCpu - 8,
      ]);
    // Switches to their socket, GPUs to their switch or socket.
    for (let k = 0; k < switches; k++)
      link(`n${n}:sw${k}`, `M${swX[k]},${ySw}L${cpuX[swSocket(k)]},${yCpu}`, [
        (swX[k]! + cpuX[swSocket(k)]!) / 2 + 14,
        (ySw + yCpu) / 2,
      ]);
    for (let g = 0; g < G; g++) {
      const k = node.switchOf[g];
      const to: [number, number] = k === null || k === undefined ? [cpuX[node.socketOf[g]!]!, yCpu] : [swX[k]!, ySw];
      link(`n${n}:gpu${g}`, `M${xs[g]},${yGpu}L${to[0]},${to[1]}`, [(xs[g]! + to[0]) / 2, (yGpu + to[1]) / 2]);
    }
    // NVLink: the NVSwitch fabric, or direct pairs as arcs under the GPUs.
    if (node.nvlink?.switched) {
      for (let g = 0; g < G; g++) link(`n${n}:nvport${g}`, `M${xs[g]},${yGpu}L${xs[g]},${yNv}`);
      box(W / 2, yNv + 8, W - 60, 16, small ? '' : 'NVSwitch', '#e8f0fb', `n${n}:nvswitch`);
    } else if (node.nvlink)
      for (let a = 0; a < G; a++)
        for (let b = a + 1; b < G; b++)
          if (node.matrix[a]![b]!.kind === 'NV') {
            const dip = yGpu + 20 + 9 * (b - a);
            link(`n${n}:nvl:${a}-${b}`, `M${xs[a]},${yGpu + 14}Q${(xs[a]! + xs[b]!) / 2},${dip} ${xs[b]},${yGpu + 14}`);
          }
    // NICs beside their switch or socket, and to the network.
    node.nics.forEach((nic, k) => {
      const sameParent = node.nics.filter((c) => c.pcieSwitch === nic.pcieSwitch && c.socket === nic.socket);
      const x =
        (nic.pcieSwitch === null ? cpuX[nic.socket]! : swX[nic.pcieSwitch]!) +
        (small ? 0 : 26) +
        (sameParent.indexOf(nic) - (sameParent.length - 1) / 2) * 20;
      const parentY = nic.pcieSwitch === null ? yCpu : ySw;
      linkG
        .append('path')
        .attr('d', `M${x},${yNic}L${nic.pcieSwitch === null ? cpuX[nic.socket] : swX[nic.pcieSwitch]},${parentY}`)
        .attr('stroke', '#c4cad3')
        .attr('stroke-width', 1.2);
      if (net) link(`n${n}:nic${k}`, `M${x},${yNic}L${x},${34}`);
      box(x, yNic, small ? 6 : 18, 12, '', '#fff7e0', `n${n}:nic${k}`);
      boxG.select(`[data-box="n${n}:nic${k}"]`).append('title').text(nic.name);
    });
    for (let s = 0; s < node.sockets; s++) box(cpuX[s]!, yCpu, 70, 22, `CPU${s}`, '#eef2f7', `n${n}:cpu${s}`);
    for (let k = 0; k < switches; k++)
      box(swX[k]!, ySw, small ? 10 : 56, 18, small ? '' : `sw${k}`, '#f8fafc', `n${n}:sw${k}`);
    for (let g = 0; g < G; g++) {
      const rank = rankOf.get(n * G + g);
      const color = rank === undefined ? '#fff' : gpuColors[d.tpGroupOf[rank]! % gpuColors.length]!;
      const w = Math.min(64, (W - 60) / G - 4);
      const gg = boxG
        .append('g')
        .attr('data-gpu', n * G + g)
        .attr('data-rank', rank ?? '')
        .attr('data-tp-group', rank === undefined ? '' : d.tpGroupOf[rank]!);
      gg.append('rect')
        .attr('x', xs[g]! - w / 2)
        .attr('y', yGpu - 16)
        .attr('width', w)
        .attr('height', 32)
        .attr('rx', 4)
        .attr('fill', color)
        .attr('fill-opacity', 0.35)
        .attr('stroke', color === '#fff' ? '#9aa3ae' : color)
        .attr('stroke-width', 2);
      gg.append('title').text(
        `GPU${g} of node ${n}${rank === undefined ? ' (idle)' : `: rank ${rank}, TP group ${d.tpGroupOf[rank]}`}`,
      );
      if (!small) {
        gg.append('text')
          .attr('x', xs[g]!)
          .attr('y', yGpu - 2)
          .attr('font-size', 12)
          .attr('text-anchor', 'middle')
          .attr('fill', '#111')
          .text(`GPU${g}`);
        gg.append('text')
          .attr('x', xs[g]!)
          .attr('y', yGpu + 12)
          .attr('font-size', 12)
          .attr('text-anchor', 'middle')
          .attr('fill', '#111')
          .text(rank === undefined ? 'idle' : `r${rank}`);
      }
    }
  }
  if (summarized) {
    const y = top + shown * nodeH + 30;
    box(
      W / 2,
      y,
      W - 60,
      40,
      `nodes 2…${nodes - 1}: ${nodes - 2} more nodes of ${G} GPUs placed alike`,
      '#f8fafc',
      'more-nodes',
    );
  }
}
