import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import { nodeTopologies, systemTopology } from '../../../../src/hardware/topology-catalog.ts';
import { groupLinks } from '../../../../src/projection/links/group-links.ts';
import { parsePlacement, processGroups } from '../../../../src/projection/links/placement.ts';
import { placedLinks, priceGroups } from '../../../../src/projection/links/placement-links.ts';
import { placedMachine, placementStep } from '../../../../src/projection/studies/placement-step.ts';
import { seedsV100 } from '../../../../src/megatron/scenarios.ts';
import { projectStep } from '../../../../src/projection/step/cluster-projection.ts';
import type { Degrees } from '../../../../src/megatron/training-setup.ts';

const deg = (tp: number, dp: number, pp = 1, cp = 1): Degrees => ({ tp, dp, pp, cp, vpp: 1 });
const box = nodeTopologies['v100-pcie-8']!;
const boxMachine = { system: systems['v100-pcie-8'], dtype: 'fp16' as const };

describe("Megatron's rank order", () => {
  it("gives the docstring's example of generate_masked_orthogonal_rank_groups (tp-pp-dp, 2-2-2: DP groups [0,4] [1,5] [2,6] [3,7])", () => {
    const g = processGroups(deg(2, 2, 2), 'tp-cp-ep-pp-dp');
    expect(g.dpCp).toEqual([
      [0, 4],
      [1, 5],
      [2, 6],
      [3, 7],
    ]);
    expect(g.tp).toEqual([
      [0, 1],
      [2, 3],
      [4, 5],
      [6, 7],
    ]);
    expect(g.pp).toEqual([
      [0, 2],
      [1, 3],
      [4, 6],
      [5, 7],
    ]);
  });

  it('keeps TP adjacent, CP next, DP × CP strided by t and stages t·cp·DP apart by default', () => {
    const g = processGroups(deg(2, 2, 2, 2));
    expect(g.tp[0]).toEqual([0, 1]);
    expect(g.cp[0]).toEqual([0, 2]);
    expect(g.dpCp[0]).toEqual([0, 2, 4, 6]);
    expect(g.pp[0]).toEqual([0, 8]);
    expect(g.embedding).toEqual(Array.from({ length: 8 }, (_, r) => [r, r + 8]));
  });
});

describe('placements', () => {
  it('puts TP pairs under one switch, or across sockets, on the seeds’ box', () => {
    expect(parsePlacement('tp-switch', box, 8).gpuOf).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(parsePlacement('tp-sockets', box, 8).gpuOf).toEqual([0, 4, 1, 5, 2, 6, 3, 7]);
    expect(parsePlacement('custom:1,0,3,2,5,4,7,6', box, 16).gpuOf.slice(8, 10)).toEqual([9, 8]);
    expect(parsePlacement('tp-pp-dp', box, 8).order).toBe('tp-cp-ep-pp-dp');
  });

  it('says what to change for a bad placement', () => {
    expect(() => parsePlacement('diagonal', box, 8)).toThrow(/unknown placement "diagonal": use megatron, tp-pp-dp/);
    expect(() => parsePlacement('custom:0,1,2', box, 8)).toThrow(/list each of the node's 8 GPUs 0…7 once/);
    expect(() => parsePlacement('custom:0,0,1,2,3,4,5,6', box, 8)).toThrow(/once/);
  });
});

describe('rings priced on the links they cross', () => {
  const price = (d: Degrees, placement: string, system = 'v100-pcie-8' as keyof typeof systems) => {
    const sys = systems[system];
    const node = systemTopology(sys);
    const world = d.tp * d.dp * d.pp * d.cp;
    const m = placedMachine({ system: sys, dtype: 'bf16' }, node, world);
    return priceGroups(m, parsePlacement(placement, node, world), processGroups(d));
  };

  it('gives a TP pair PCIe Gen3 (NCCL PCI_BW 12) under a switch, 12/1.2 through the root complex, the measured 7.6 across sockets', () => {
    expect(price(deg(2, 1), 'megatron').tp.link.busGBps).toBeCloseTo(12, 9);
    expect(price(deg(2, 1), 'custom:0,2,1,3,4,5,6,7').tp.link.busGBps).toBeCloseTo(10, 9);
    expect(price(deg(2, 1), 'tp-sockets').tp.link.busGBps).toBeCloseTo(7.6, 9);
  });

  it('divides a link among the rings of one kind that cross it at once', () => {
    // Four TP pairs across sockets: each direction of the one cross-socket link carries 4 hops.
    const p = price(deg(2, 4), 'tp-sockets');
    expect(p.tp.link.busGBps).toBeCloseTo(7.6 / 4, 9);
    expect(p.tp.rings.every((r) => r.slowest.kind === 'SYS' && r.slowest.sharedBy === 4)).toBe(true);
  });

  it("agrees with the catalog's one-number links where no link is shared: the seeds' 8-ring, DGX NVSwitch, the rail network", () => {
    expect(price(deg(8, 1), 'megatron').tp.link.busGBps).toBeCloseTo(systems['v100-pcie-8'].intra.busGBps, 9);
    expect(price(deg(8, 1), 'megatron', 'dgx-h100').tp.link.busGBps).toBeCloseTo(18 * 20.6, 9);
    expect(price(deg(8, 1), 'megatron', 'dgx-a100').tp.link.busGBps).toBe(systems['dgx-a100'].intra.busGBps);
    // DP across 4 nodes, one member per node, 8 groups (one per rail): groupLink's 1 NIC.
    const d = deg(8, 4);
    const h100 = systems['dgx-h100'];
    expect(price(d, 'megatron', 'dgx-h100').dpCp.link.busGBps).toBeCloseTo(groupLinks(h100, d).dpCp.busGBps, 9);
    // DP with 4 members per node (t = 2, DP = 16 on 4 nodes): 4 NICs per ring, as groupLink says.
    const d2 = deg(2, 16);
    expect(price(d2, 'megatron', 'dgx-h100').dpCp.link.busGBps).toBeCloseTo(groupLinks(h100, d2).dpCp.busGBps, 9);
    // DP across 16 nodes: the ring's network hops at the 16-node bus bandwidth (ring-node-scaling.ts), as groupLink's.
    const d3 = deg(8, 16);
    const placed = price(d3, 'megatron', 'dgx-h100').dpCp.link.busGBps;
    expect(placed).toBeCloseTo(groupLinks(h100, d3).dpCp.busGBps, 9);
    expect(placed).toBeCloseTo(h100.inter.nicGBps * (320 / 360), 9);
  });

  it("gives a placed ring across nodes groupLink's NCCL channels (nccl-ring-channels.ts): 4 at one rank per node on H100, 16 at four", () => {
    const h100 = systems['dgx-h100'];
    for (const [d, channels] of [
      [deg(8, 4), 4],
      [deg(2, 16), 16],
    ] as const) {
      const placed = price(d, 'megatron', 'dgx-h100').dpCp.link;
      expect(placed.ncclChannels).toBe(channels);
      expect(placed.ncclChannels).toBe(groupLinks(h100, d).dpCp.ncclChannels);
    }
    // A group inside one node keeps the intra link's (NVLink SHARP's 16 on H100, the PCIe box's 2).
    expect(price(deg(8, 1), 'megatron', 'dgx-h100').tp.link.ncclChannels).toBe(h100.intra.ncclChannels);
    expect(price(deg(8, 1), 'megatron').tp.link.ncclChannels).toBe(2);
  });

  it('reaches NVLink pairs of the DGX-1 cube-mesh directly and the others over PCIe', () => {
    expect(price(deg(2, 1), 'megatron', 'dgx1-v100').tp.link.busGBps).toBeCloseTo(2 * 20, 9); // GPU0–GPU1 NV2
    expect(price(deg(2, 1), 'custom:0,5,1,2,3,4,6,7', 'dgx1-v100').tp.rings[0]!.slowest.kind).toBe('SYS');
  });

  it('orders a ring through a node as NCCL’s search would: DGX-1 GPUs 0,2,4,6 close over NVLink (0-2-6-4), not SYS', () => {
    const dp = price(deg(2, 4), 'megatron', 'dgx1-v100').dpCp;
    expect(dp.rings[0]!.gpus).toEqual([0, 2, 4, 6]);
    expect(dp.rings[0]!.hops.map((h) => `${h.from}-${h.to}`)).toEqual(['0-2', '2-6', '6-4', '4-0']);
    expect(dp.rings[0]!.slowest.kind).toBe('NV');
    expect(dp.link.busGBps).toBeCloseTo(20, 9); // the NV1 hop 4-0
  });
});

describe('placement step', () => {
  it('moves the projected step with the placement, and every link load sums to the kind’s ring bytes', async () => {
    const setup = { ...seedsV100.setup, tp: 2 };
    const under = await placementStep(setup, boxMachine, box, parsePlacement('tp-switch', box, 8));
    const across = await placementStep(setup, boxMachine, box, parsePlacement('tp-sockets', box, 8));
    expect(across.step.stepMs).toBeGreaterThan(under.step.stepMs);
    const tp = under.volumes.find((v) => v.kind === 'tp')!;
    // 4 TP pairs × 2 hops × (2 PCIe ports per PIX hop): 16 link directions each carrying the ring bytes.
    const tpLinks = under.loads.filter((l) => (l.bytesPerStep.tp ?? 0) > 0);
    expect(tpLinks).toHaveLength(16);
    for (const l of tpLinks) expect(l.bytesPerStep.tp).toBeCloseTo(tp.ringLinkBytesPerStep, 3);
    expect(tp.exposedShare).toBeGreaterThan(0);
    expect(tp.exposedShare).toBeLessThanOrEqual(1);
  });

  it('gives the plain projection when the placed links equal the defaults (one TP group of 8 on the seeds’ box)', async () => {
    const setup = { ...seedsV100.setup, tp: 8 };
    const placed = await placementStep(setup, boxMachine, box, parsePlacement('megatron', box, 8));
    const plain = await projectStep(setup, boxMachine);
    expect(placedLinks(placed.priced).tp.busGBps).toBe(boxMachine.system.intra.busGBps);
    expect(placed.step.stepMs).toBeCloseTo(plain.stepMs, 9);
  });
});
