// `npm run project -- --topology [--json]`: the node's GPU matrix, the placement's rings and every link's load per step, per t.
import { readFileSync } from 'node:fs';
import { parseTopoMatrix } from '../../src/hardware/topo-parse.ts';
import { formatMatrix, intelP2pOverhead, pcieGBps, type NodeTopology } from '../../src/hardware/topology.ts';
import { systemTopology } from '../../src/hardware/topology-catalog.ts';
import { projectStep } from '../../src/projection/step/cluster-projection.ts';
import { groupKinds } from '../../src/projection/links/placement.ts';
import { parsePlacement } from '../../src/projection/links/placement.ts';
import { kindLabels } from '../../src/projection/links/placement-links.ts';
import { placementStep } from '../../src/projection/studies/placement-step.ts';
import { formatMs } from '../../src/core/format.ts';
import type { ProjectArgs } from './project-args.ts';
import { alignedTable } from '../cli/text-table.ts';

/** Links listed per t (the heaviest by exposed bytes per step). */
const linksShown = 12;

const mb = (bytes: number): string => (bytes / 1e6).toFixed(1);
const gbps = (x: number): string => (x >= 100 ? x.toFixed(0) : x.toPrecision(3));

/** The node: the catalog's for the system, or the --topo-file output parsed. */
function nodeOf(args: ProjectArgs): NodeTopology {
  if (args.topoFile === undefined) return systemTopology(args.system);
  let text: string;
  try {
    text = readFileSync(args.topoFile, 'utf8');
  } catch (e) {
    throw new Error(`--topo-file ${args.topoFile}: cannot read it (${(e as Error).message}).`, { cause: e });
  }
  return parseTopoMatrix(text, { arch: args.system.gpu.arch }, args.topoFile);
}

/** The report's lines. Throws with a message saying what to change. */
export async function topologyReport(args: ProjectArgs): Promise<string[]> {
  const node = nodeOf(args);
  const machine = { system: args.system, dtype: args.dtype, kernels: args.kernels };
  const nodes = Math.ceil(args.setup.gpus / node.gpus);
  const out: string[] = [
    `${node.label}${nodes > 1 ? ` · ${nodes} nodes (each alike; links below are per node)` : ''}`,
    formatMatrix(node),
    `NICs: ${node.nics.map((n) => `${n.name} (socket ${n.socket}, ${n.pcieSwitch === null ? 'root complex' : `switch ${n.pcieSwitch}`})`).join(', ') || 'none'}`,
    `links per direction: PCIe Gen${node.pcieGen} x16 ${gbps(pcieGBps(node.pcieGen))} GB/s` +
      (node.intelRootComplex
        ? `, ${gbps(pcieGBps(node.pcieGen) / intelP2pOverhead)} through the Intel root complex`
        : '') +
      `, between sockets ${node.smp.GBps > 0 ? `${gbps(node.smp.GBps)} GB/s` : '—'} (${node.smp.label})` +
      (node.nvlink
        ? `, NVLink ${node.nvlink.perLinkGBps} GB/s × ${node.nvlink.linksPerGpu} per GPU${node.nvlink.switched ? ' (NVSwitch)' : ''}`
        : '') +
      `, NIC ${gbps(args.system.inter.nicGBps)} GB/s`,
    `sources: ${node.source}`,
  ];
  const json: object[] = [];
  for (const tp of args.degrees) {
    const setup = { ...args.setup, tp };
    let r: Awaited<ReturnType<typeof placementStep>>;
    let plainMs: number;
    try {
      const placement = parsePlacement(args.placement, node, setup.gpus);
      r = await placementStep(setup, machine, node, placement);
      plainMs = (await projectStep(setup, machine)).stepMs;
    } catch (e) {
      if ((e as Error).message.startsWith('unknown placement') || (e as Error).message.startsWith('placement '))
        throw e;
      if (args.json) json.push({ tp, illegal: (e as Error).message });
      else out.push('', `t=${tp}: illegal: ${(e as Error).message}`);
      continue;
    }
    const d = r.step.degrees;
    if (args.json) {
      json.push({
        tp,
        degrees: d,
        placement: {
          name: r.placement.name,
          label: r.placement.label,
          order: r.placement.order,
          gpuOf: r.placement.gpuOf,
        },
        stepMs: r.step.stepMs,
        catalogStepMs: plainMs,
        links: Object.fromEntries(groupKinds.map((k) => [k, r.priced[k].link])),
        volumes: r.volumes,
        loads: r.loads,
      });
      continue;
    }
    out.push(
      '',
      `t=${tp} (DP ${d.dp}, p ${d.pp}, cp ${d.cp}) · placement: ${r.placement.label}`,
      `step ${formatMs(r.step.stepMs)} on the placed links (${formatMs(plainMs)} with the catalog's one link per group), ` +
        `exposed ${formatMs(r.step.exposedMs)}`,
    );
    const rings = groupKinds.flatMap((k) => {
      const p = r.priced[k];
      if (p.rings.length === 0) return [];
      const worst = p.rings.reduce((a, x) => (x.busGBps < a.busGBps ? x : a));
      const s = worst.slowest;
      return [
        [
          kindLabels[k],
          String(p.rings.length),
          String(worst.members.length),
          `GPU${s.from}→GPU${s.to} ${s.kind}${s.sharedBy > 1 ? ` ×${s.sharedBy}` : ''}`,
          gbps(p.link.busGBps),
          String(p.link.alphaUs),
        ],
      ];
    });
    out.push(...alignedTable(['group', 'rings', 'size', 'slowest hop (× rings sharing it)', 'GB/s', 'α µs'], rings));
    out.push(
      ...alignedTable(
        ['per step', 'calls', 'payload MB', 'per ring link MB', 'comm', 'exposed'],
        r.volumes.map((v) => [
          kindLabels[v.kind],
          String(v.callsPerStep),
          mb(v.payloadBytesPerStep),
          mb(v.ringLinkBytesPerStep),
          formatMs(v.commMsPerStep),
          `${(100 * v.exposedShare).toFixed(0)}%`,
        ]),
      ),
    );
    const kinds = groupKinds.filter((k) => r.loads.some((l) => (l.bytesPerStep[k] ?? 0) > 0));
    out.push(
      `link load per step (${Math.min(linksShown, r.loads.length)} of ${r.loads.length} links, most exposed bytes first; MB):`,
      ...alignedTable(
        ['link', 'GB/s', ...kinds.map((k) => kindLabels[k]), 'exposed'],
        r.loads
          .slice(0, linksShown)
          .map((l) => [
            nodes > 1 ? `node ${l.link.node}: ${l.link.label}` : l.link.label,
            gbps(l.link.capacityGBps),
            ...kinds.map((k) => mb(l.bytesPerStep[k] ?? 0)),
            mb(l.exposedBytesPerStep),
          ]),
      ),
    );
  }
  if (args.json) return [JSON.stringify({ node, nodes, rows: json }, (_, v) => (v === Infinity ? null : v), 2)];
  return out;
}
