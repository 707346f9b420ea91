import { describe, expect, it } from 'vitest';
import { parseSystem, systemNames, systems } from '../../../src/hardware/systems.ts';
import { nodeTopologies, systemTopology } from '../../../src/hardware/topology-catalog.ts';
import { cellText, formatMatrix } from '../../../src/hardware/topology.ts';

describe('the catalog’s node topologies', () => {
  it('gives every catalog system a node of its GPUs per node, a symmetric matrix and a NIC per GPU', () => {
    for (const name of systemNames) {
      const t = systemTopology(systems[name]);
      expect(t.gpus).toBe(systems[name].gpusPerNode);
      for (let i = 0; i < t.gpus; i++)
        for (let j = 0; j < t.gpus; j++) expect(cellText(t.matrix[i]![j]!)).toBe(cellText(t.matrix[j]![i]!));
      expect(t.nicOf.every((k) => k >= 0 && k < t.nics.length)).toBe(true);
    }
  });

  it('gives back the catalog’s one-number NVLink figures: links per GPU × NCCL’s per-link bandwidth (within 0.3%)', () => {
    for (const name of ['dgx1-v100', 'dgx2-v100', 'dgx-a100', 'dgx-h100', 'dgx-b200'] as const) {
      const nv = nodeTopologies[name]!.nvlink!;
      expect(Math.abs((nv.linksPerGpu * nv.perLinkGBps) / systems[name].intra.busGBps - 1)).toBeLessThan(0.003);
    }
  });

  it("lays the seeds' box out as PIX under a switch, PHB across a socket's switches, SYS across sockets", () => {
    const t = nodeTopologies['v100-pcie-8']!;
    expect([t.matrix[0]![1]!.kind, t.matrix[0]![2]!.kind, t.matrix[0]![4]!.kind]).toEqual(['PIX', 'PHB', 'SYS']);
    expect(formatMatrix(t).split('\n')[1]).toBe('GPU0\t X \tPIX\tPHB\tPHB\tSYS\tSYS\tSYS\tSYS\t0\t0\tmlx5_0');
  });

  it('asks for --topo-file for a user-defined system', () => {
    expect(() => systemTopology(parseSystem('custom:a100-sxm-80gb:4:2:100'))).toThrow(
      /has no topology in the catalog: pass an nvidia-smi topo -m output with --topo-file FILE/,
    );
  });
});
