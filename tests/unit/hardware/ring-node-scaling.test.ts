import { describe, expect, it } from 'vitest';
import { ringNodeScale } from '../../../src/hardware/ring-node-scaling.ts';
import { groupLink, systems } from '../../../src/hardware/systems.ts';

describe('a ring across more nodes runs at a lower bus bandwidth (NVIDIA/nccl #1229)', () => {
  it('keeps the table’s ratios to its 4-node figure at its points, 1 at 4 nodes and fewer', () => {
    expect(ringNodeScale(2)).toBe(1);
    expect(ringNodeScale(4)).toBe(1);
    expect(ringNodeScale(8)).toBeCloseTo(345 / 360, 12);
    expect(ringNodeScale(32)).toBeCloseTo(300 / 360, 12);
    expect(ringNodeScale(128)).toBeCloseTo(260 / 360, 12);
  });

  it('is linear in log2(nodes) between points and continues the last slope past 128, never below a quarter', () => {
    // 48 nodes: 300 + (280 − 300)·(log2 48 − 5) = 300 − 20·0.585.
    expect(ringNodeScale(48)).toBeCloseTo((300 - 20 * (Math.log2(48) - 5)) / 360, 12);
    expect(ringNodeScale(256)).toBeCloseTo(240 / 360, 12);
    expect(ringNodeScale(1e12)).toBe(0.25);
    for (let n = 4; n < 512; n++) expect(ringNodeScale(n + 1)).toBeLessThanOrEqual(ringNodeScale(n));
  });

  it('scales a group’s network link by its node count: DGX H100, one rank per node', () => {
    const h100 = systems['dgx-h100'];
    const perNic = h100.inter.nicGBps;
    expect(groupLink(h100, 4, 1).busGBps).toBeCloseTo(perNic, 12);
    expect(groupLink(h100, 48, 1).busGBps).toBeCloseTo(perNic * ringNodeScale(48), 12);
    // Inside a node nothing changes.
    expect(groupLink(h100, 8, 8)).toBe(h100.intra);
  });
});
