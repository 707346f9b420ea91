import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseTopoMatrix } from '../../../src/hardware/topo-parse.ts';
import { cellText, type NodeTopology } from '../../../src/hardware/topology.ts';
import { nodeTopologies } from '../../../src/hardware/topology-catalog.ts';

/**
 * Real `nvidia-smi topo -m` outputs posted in public issue threads (tests/fixtures/topo, each
 * file's first line cites its thread), parsed as a user pastes them: tabs or spaces, with or
 * without NIC rows, NUMA columns and legend.
 */
const fixture = (name: string): string => readFileSync(`tests/fixtures/topo/${name}`, 'utf8');
const volta = { arch: 'volta' } as const;
const cells = (t: NodeTopology): string[][] =>
  t.matrix.map((row, i) => row.map((c, j) => (i === j ? 'X' : cellText(c))));

describe('parseTopoMatrix on real outputs', () => {
  it('reads an 8-GPU PCIe box with PIX, PHB and SYS (NVIDIA/nccl#1439): 2 sockets × 2 switches × 2 GPUs', () => {
    const t = parseTopoMatrix(fixture('nccl-1439-pix-phb-sys.txt'), volta);
    expect(t.gpus).toBe(8);
    expect(t.sockets).toBe(2);
    expect(t.socketOf).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
    expect(t.switchOf).toEqual([0, 0, 1, 1, 2, 2, 3, 3]);
    expect(t.nics).toEqual([]);
    expect(t.nvlink).toBeUndefined();
    // The same matrix as the catalog's layout of the seeds' box.
    expect(cells(t)).toEqual(cells(nodeTopologies['v100-pcie-8']!));
  });

  it('reads switches two levels deep and a NIC row (lattice/quda#669): PXB pairs share an upper bridge', () => {
    const t = parseTopoMatrix(fixture('quda-669-pix-pxb-sys.txt'), volta);
    expect(t.gpus).toBe(8);
    expect(t.socketOf).toEqual([0, 0, 0, 0, 1, 1, 1, 1]); // the CPU affinity column (0-13 / 14-27)
    expect(t.switchOf).toEqual([0, 0, 1, 1, 2, 2, 3, 3]);
    expect(t.bridgeOf[0]).toBe(t.bridgeOf[1]);
    expect(t.bridgeOf[2]).toBe(t.bridgeOf[3]);
    expect(t.bridgeOf[0]).not.toBe(t.bridgeOf[2]);
    expect(t.nics).toEqual([{ name: 'mlx5_0', socket: 1, pcieSwitch: null }]);
    expect(t.nicOf).toEqual(new Array(8).fill(0));
    expect(t.matrix[0]![2]!.kind).toBe('PXB');
    expect(t.matrix[3]![4]!.kind).toBe('SYS');
  });

  it('reads an all-SYS box with two NICs on one switch (NVIDIA/go-gpuallocator#17): sockets from NUMA affinity', () => {
    const t = parseTopoMatrix(fixture('gpuallocator-17-4090-sys.txt'), { arch: 'ampere' });
    expect(t.gpus).toBe(8);
    expect(t.socketOf).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
    expect(t.switchOf).toEqual(new Array(8).fill(null)); // no two GPUs PIX apart
    expect(t.nics.map((n) => [n.name, n.socket, n.pcieSwitch])).toEqual([
      ['NIC0', 1, 0],
      ['NIC1', 1, 0],
    ]);
    expect(t.nicOf[6]).toBe(0); // GPU6 is PHB to both; the others SYS
    expect(t.pcieGen).toBe(4);
  });

  it('reads a 4-GPU box without legend or NUMA column (NVIDIA/nccl#428): SYS and NODE', () => {
    const t = parseTopoMatrix(fixture('nccl-428-t4-sys-node.txt'), volta);
    expect(t.gpus).toBe(4);
    expect(t.socketOf).toEqual([0, 1, 1, 1]);
    expect(cells(t)[1]).toEqual(['SYS', 'X', 'NODE', 'NODE']);
  });
});

describe('parseTopoMatrix on NVLink', () => {
  const nvswitch = [
    '\tGPU0\tGPU1\tGPU2\tCPU Affinity',
    'GPU0\t X \tNV12\tNV12\t0-63',
    'GPU1\tNV12\t X \tNV12\t0-63',
    'GPU2\tNV12\tNV12\t X \t0-63',
  ].join('\n');

  it('takes every pair NV# alike as an NVSwitch fabric with that many links per GPU', () => {
    const t = parseTopoMatrix(nvswitch, { arch: 'ampere' });
    expect(t.nvlink).toMatchObject({ switched: true, linksPerGpu: 12, perLinkGBps: 20 });
  });
});

describe('parseTopoMatrix errors', () => {
  const good = fixture('nccl-428-t4-sys-node.txt');

  it('asks for the header when there is none', () => {
    expect(() => parseTopoMatrix('GPU0 X SYS\n', volta)).toThrow(/no header line with a GPU0 column/);
  });

  it('names a missing row', () => {
    expect(() => parseTopoMatrix(good.replace(/^GPU3.*$/m, ''), volta)).toThrow(/lists GPU3 but no row starts with it/);
  });

  it('names a cut row', () => {
    expect(() => parseTopoMatrix(good.replace('GPU2    SYS     NODE     X      NODE', 'GPU2    SYS'), volta)).toThrow(
      /row GPU2 has \d+ cells, the header 4 devices/,
    );
  });

  it('names the cell that is not a link kind', () => {
    expect(() =>
      parseTopoMatrix(good.replace('GPU1    SYS      X      NODE', 'GPU1    SYS      X      FOO'), volta),
    ).toThrow(/row GPU1, column GPU2: "FOO" is not a link kind/);
  });

  it('rejects an asymmetric matrix', () => {
    expect(() =>
      parseTopoMatrix(good.replace('GPU1    SYS      X      NODE', 'GPU1    SYS      X      PHB'), volta),
    ).toThrow(/GPU1→GPU2 is PHB but GPU2→GPU1 is NODE/);
  });
});
