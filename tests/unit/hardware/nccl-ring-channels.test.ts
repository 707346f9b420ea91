import { describe, expect, it } from 'vitest';
import {
  ncclNvlsChannels,
  ncclNvswitchRingChannels,
  ncclRingChannels,
  ncclSearchSpeed,
} from '../../../src/hardware/nccl-ring-channels.ts';
import { interconnectPresets } from '../../../src/hardware/interconnect.ts';
import { ncclFootprint } from '../../../src/hardware/overlap-cost.ts';
import { groupLink, systems } from '../../../src/hardware/systems.ts';

describe("NCCL's channels for a ring across nodes (NCCL v2.21.5-1 search.cc, connect.cc)", () => {
  it('searches at the first listed speed ≤ min(PCIe, NIC): Gen5 x16 48, Gen4 24, Gen3 12', () => {
    expect(ncclSearchSpeed('hopper', Math.min(48, 50))).toBe(48);
    expect(ncclSearchSpeed('ampere', Math.min(24, 25))).toBe(24);
    expect(ncclSearchSpeed('volta', Math.min(12, 12.5))).toBe(12);
    // sm90's list has 45 and 42 where the older list jumps from 48 to 30.
    expect(ncclSearchSpeed('hopper', 44)).toBe(42);
    expect(ncclSearchSpeed('ampere', 44)).toBe(30);
  });

  it('one rank per node: H100 on NDR 4 (48 → dup 2 × 24 → connect × 2), A100 on HDR 2 (24 < 25: no dup)', () => {
    expect(ncclRingChannels('hopper', 1, 8, 48)).toBe(4);
    expect(ncclRingChannels('ampere', 1, 8, 24)).toBe(2);
    expect(ncclRingChannels('volta', 1, 4, 12)).toBe(2);
  });

  it('more ranks per node: H100 8 and 16 (k ≤ 4 dup), 16 at 8 per node (k > 4 and 48 < 50: no dup, 2 × 8)', () => {
    expect(ncclRingChannels('hopper', 2, 8, 48)).toBe(8);
    expect(ncclRingChannels('hopper', 4, 8, 48)).toBe(16);
    expect(ncclRingChannels('hopper', 8, 8, 48)).toBe(16);
    // The Hopper rule "4 compute channels per search channel on < 8 PPN": 6 channels at 48 → 12 → 24.
    expect(ncclRingChannels('hopper', 6, 8, 48)).toBe(24);
    expect(ncclRingChannels('ampere', 8, 8, 24)).toBe(16);
    // Ranks beyond the node's NICs share them: no more channels than NICs searched.
    expect(ncclRingChannels('ampere', 8, 4, 24)).toBe(8);
  });

  it("gives a DP group's network link its channels, which set the SMs its collectives take", () => {
    const h100 = systems['dgx-h100'];
    const dp48 = groupLink(h100, 48, 1);
    expect(dp48.ncclChannels).toBe(4);
    expect(ncclFootprint('reduceScatter', dp48).sms).toBe(4);
    expect(groupLink(systems['dgx-a100-40gb'], 64, 1).ncclChannels).toBe(2);
    expect(groupLink(h100, 96, 2).ncclChannels).toBe(8);
    // Inside a node the intra link keeps its own (NVLink SHARP's 16 on H100).
    expect(groupLink(h100, 8, 8).ncclChannels).toBe(ncclNvlsChannels);
  });

  it('inside an NVSwitch node: 24 ring channels on A100 (6 × 40 of 240) and H100 (6 × 60 of 370.8), 16 for NVLink SHARP', () => {
    expect(ncclNvswitchRingChannels('ampere', 12)).toBe(24);
    expect(ncclNvswitchRingChannels('hopper', 18)).toBe(24);
    expect(ncclNvlsChannels).toBe(16);
    expect(interconnectPresets['nvlink-a100'].ncclChannels).toBe(24);
    expect(interconnectPresets['nvswitch-h100'].ncclChannels).toBe(16);
    // Fewer links: 4 NVLinks of an A100 pair (80) run 2 × 40 → dup 4 → 8.
    expect(ncclNvswitchRingChannels('ampere', 4)).toBe(8);
  });
});
