import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import { groupLinks, membersPerNode, p2pUs } from '../../../../src/projection/links/group-links.ts';

const h100 = systems['dgx-h100'];

describe('group links under the tp-cp-ep-dp-pp rank order', () => {
  it('counts the members of a strided group a node holds', () => {
    expect(membersPerNode(h100, 1, 8)).toBe(8);
    expect(membersPerNode(h100, 2, 16)).toBe(4);
    expect(membersPerNode(h100, 8, 4)).toBe(1);
    expect(membersPerNode(h100, 16, 2)).toBe(1);
  });

  it('keeps TP inside a node and sends DP and PP across nodes when t fills the node', () => {
    const l = groupLinks(h100, { tp: 8, pp: 4, vpp: 1, cp: 1, dp: 4 });
    expect(l.tp).toBe(h100.intra);
    expect(l.dpCp.name).toBe('inter-node');
    expect(l.pp.name).toBe('inter-node');
  });

  it('keeps a small DP × CP group and the stage boundary inside a node when they fit', () => {
    const l = groupLinks(h100, { tp: 2, pp: 2, vpp: 1, cp: 1, dp: 4 });
    expect(l.dpCp).toBe(h100.intra); // 4 ranks 2 apart on one node of 8
    expect(l.pp.name).toBe('inter-node'); // stages 8 ranks apart
    const small = groupLinks(h100, { tp: 1, pp: 2, vpp: 1, cp: 2, dp: 2 });
    expect(small.cp).toBe(h100.intra);
    expect(small.pp).toBe(h100.intra); // stages 4 ranks apart
  });

  it('puts the tied-embedding pair (ranks r and r + t·cp·DP·(p − 1), r < t·cp·DP) on one node only when both are', () => {
    const on = (tp: number, pp: number, dp = 1) => groupLinks(h100, { tp, pp, vpp: 1, cp: 1, dp }).embedding;
    // t 2, p 4 on 8 GPUs: pairs {0, 6} and {1, 7}, both on node 0 (6 apart: ⌊8/6⌋ = 1 would say across).
    expect(on(2, 4)).toBe(h100.intra);
    // t 1, p 6: {0, 5} on node 0.
    expect(on(1, 6)).toBe(h100.intra);
    // t 2, p 3: {0, 4}, {1, 5}.
    expect(on(2, 3)).toBe(h100.intra);
    // t 2, p 8 on 16 GPUs: {0, 14} crosses; t 4, p 3: {0, 8} crosses; t 2, p 4, DP 2: {0, 12} crosses.
    expect(on(2, 8).name).toBe('inter-node');
    expect(on(4, 3).name).toBe('inter-node');
    expect(on(2, 4, 2).name).toBe('inter-node');
    // p 2: the stage boundary's pair.
    expect(on(4, 2)).toBe(h100.intra);
    expect(on(8, 2).name).toBe('inter-node');
  });

  it('prices a p2p send as the NCCL base latency, one α and the bytes at the link bandwidth', () => {
    const bytes = 64e6;
    expect(p2pUs(h100, h100.intra, bytes)).toBeCloseTo(
      h100.collectiveBaseUs + h100.intra.alphaUs + bytes / (h100.intra.busGBps * 1e3),
      9,
    );
  });
});
