import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import { nodeTopologies } from '../../../../src/hardware/topology-catalog.ts';
import { seedsV100 } from '../../../../src/megatron/scenarios.ts';
import type { Degrees, TrainingSetup } from '../../../../src/megatron/training-setup.ts';
import { priceLayers } from '../../../../src/projection/step/layer-pricing.ts';
import { assembleStep, stepSummary } from '../../../../src/projection/step/cluster-projection.ts';
import { groupLinks } from '../../../../src/projection/links/group-links.ts';
import { dpSharedLinks, fairShareFinish, tpUnderSharing } from '../../../../src/projection/links/link-sharing.ts';
import { parsePlacement } from '../../../../src/projection/links/placement.ts';
import { machineOnPlacement } from '../../../../src/projection/studies/placement-step.ts';

const deg = (tp: number, dp: number, pp = 1, cp = 1): Degrees => ({ tp, dp, pp, cp, vpp: 1 });

describe('two transfers on one link (max-min fair share)', () => {
  // A link of 100 GB/s = 1e8 B/ms: 200 MB alone takes 2 ms, 100 MB 1 ms.
  const C = 100e9 / 1e3;
  const alone = (bytes: number) => bytes / C;

  it('started together: the smaller finishes at 2 × its time, the larger at the sum of both', () => {
    const [a, b] = fairShareFinish([
      { startMs: 0, aloneMs: alone(200e6) },
      { startMs: 0, aloneMs: alone(100e6) },
    ]);
    // Both at 50 GB/s until the 100 MB is through (2 ms); the rest of the 200 MB (100 MB) alone at 100 GB/s: 1 ms.
    expect(b).toBeCloseTo(2, 12);
    expect(a).toBeCloseTo(3, 12);
  });

  it('the second issued 1 ms later: both share from then on', () => {
    // At 1 ms the 200 MB transfer has 100 MB left, the new one 100 MB: both at 50 GB/s, both done at 3 ms.
    const [a, b] = fairShareFinish([
      { startMs: 0, aloneMs: alone(200e6) },
      { startMs: 1, aloneMs: alone(100e6) },
    ]);
    expect(a).toBeCloseTo(3, 12);
    expect(b).toBeCloseTo(3, 12);
  });

  it('transfers that do not meet keep their own time, and bad input says what is wrong', () => {
    expect(
      fairShareFinish([
        { startMs: 0, aloneMs: 2 },
        { startMs: 2.5, aloneMs: 1 },
      ]),
    ).toEqual([2, 3.5]);
    expect(() => fairShareFinish([{ startMs: 0, aloneMs: -1 }])).toThrow(/non-negative time/);
  });
});

describe('which groups share a link with the DP × CP group', () => {
  const h100 = { system: systems['dgx-h100'], dtype: 'bf16' as const };

  it('rank order: t 2 × DP 4 in one DGX H100 node shares the NVSwitch port; DP and PP across nodes share the NIC', () => {
    expect(dpSharedLinks(h100, deg(2, 4)).map((x) => x.with)).toEqual(['tp']);
    expect(dpSharedLinks(h100, deg(2, 4))[0]!.link).toContain(systems['dgx-h100'].intra.label);
    // t 4, DP 8, p 2 on 64 GPUs: DP (stride 4) and the stage boundary (stride 32) both leave the node; TP stays in.
    const across = dpSharedLinks(h100, deg(4, 8, 2));
    expect(across.map((x) => x.with)).toEqual(['pp']);
    expect(across[0]!.link).toContain('NIC');
    // No DP group: nothing overlapped to share with.
    expect(dpSharedLinks(h100, deg(8, 1, 2))).toEqual([]);
  });

  it("placed: the links the rings actually cross (the seeds' PCIe box, t 2 × DP 4)", () => {
    const box = nodeTopologies['v100-pcie-8']!;
    const machine = { system: systems['v100-pcie-8'], dtype: 'fp16' as const };
    const d = deg(2, 4);
    const placed = machineOnPlacement(machine, box, d, 8, parsePlacement('megatron', box, 8)).machine;
    const shared = dpSharedLinks(placed, d);
    expect(shared.map((x) => x.with)).toEqual(['tp']);
    // The label is one of the physical links both kinds load.
    expect(shared[0]!.link).toMatch(/GPU\d|switch|CPU/);
  });
});

describe('a step whose overlapped gradient reduce shares the TP link', () => {
  // The seeds' tiny GPT on their 8×V100 PCIe box, t 2, DP 4, --overlap-grad-reduce: DP and TP both on PCIe.
  const setup: TrainingSetup = { ...seedsV100.setup, tp: 2, overlapGradReduce: true };
  const system = systems[seedsV100.system];
  const d = deg(2, 4);
  const links = groupLinks(system, d);
  const label = 'the shared port';
  const sharing = { system, dtype: seedsV100.dtype, placed: links, placedShared: { tp: label } };
  const apart = { system, dtype: seedsV100.dtype, placed: links, placedShared: {} };

  it('prices the sharing by the rule and adds exactly linkSharingMs to the step', async () => {
    const pricing = await priceLayers(setup, sharing);
    const s = assembleStep(setup, sharing, pricing);
    const u = assembleStep(setup, apart, pricing);
    expect(s.linkSharing).toHaveLength(1);
    const c = s.linkSharing[0]!;
    expect(c).toMatchObject({ overlap: 'overlapGradReduce', with: 'tp', link: label });
    expect(c.sharedMs).toBeGreaterThan(0);
    // Both are the hidden bucket time H times a coefficient of the layer: H·uB and H·slowB.
    const x = tpUnderSharing(pricing, sharing, d, setup.overlap);
    expect(x.slowB).toBeGreaterThan(0);
    expect(c.computeDelayMs / c.sharedMs).toBeCloseTo(x.slowB / x.uB, 9);
    expect(s.linkSharingMs).toBeGreaterThan(0);
    expect(u.linkSharing).toEqual([]);
    expect(u.linkSharingMs).toBe(0);
    // Everything else equal, the shared step is the apart step plus what the link added (in exposed DP).
    expect(s.stepMs - u.stepMs).toBeCloseTo(s.linkSharingMs, 9);
    expect(s.exposedByGroup.dp - u.exposedByGroup.dp).toBeCloseTo(s.linkSharingMs, 9);
    expect(stepSummary(setup, sharing, pricing)?.stepMs).toBe(s.stepMs);
  });

  it('without --overlap-grad-reduce the buckets run after backward and share nothing', async () => {
    const off = { ...setup, overlapGradReduce: false };
    const s = assembleStep(off, sharing, await priceLayers(off, sharing));
    expect(s.linkSharing).toEqual([]);
    expect(s.linkSharingMs).toBe(0);
  });
});

describe("a step whose overlapped gradient reduce shares the NIC with the pipeline's p2p", () => {
  // A small Llama on 8 DGX H100: t 4, p 2 × v 2, DP 8 — DP (stride 4) and the stage boundary
  // (stride 32) both leave the node. Stage 0's chunk 1 is reduced while its chunk 0's backwards,
  // and their p2p, still run (1M-parameter buckets split chunk 0's gradients too).
  const sizes = { s: 1024, b: 1, h: 1024, heads: 16, groups: 16, ffn: 2816, vocab: 32000 };
  const setup: TrainingSetup = {
    sizes,
    tp: 4,
    sp: true,
    layers: 8,
    gpus: 64,
    globalBatch: 64,
    overlap: true,
    pp: 2,
    vpp: 2,
    overlapGradReduce: true,
    bucketSize: 1_000_000,
  };
  const system = systems['dgx-h100'];
  const d = deg(4, 8, 2);
  const links = groupLinks(system, d);

  it('names the NIC, and adds exactly linkSharingMs (in exposed DP) to the step', async () => {
    const rankOrder = { system, dtype: 'bf16' as const };
    expect(dpSharedLinks(rankOrder, d).map((x) => x.with)).toEqual(['pp']);
    const sharing = { ...rankOrder, placed: links, placedShared: { pp: 'the NIC' } };
    const apart = { ...rankOrder, placed: links, placedShared: {} };
    const pricing = await priceLayers(setup, sharing);
    const s = assembleStep(setup, sharing, pricing);
    const u = assembleStep(setup, apart, pricing);
    expect(s.linkSharing.map((c) => [c.overlap, c.with, c.link])).toEqual([['overlapGradReduce', 'pp', 'the NIC']]);
    // Each p2p in the window shares the NIC with the buckets: the buckets lose its time, the receiver waits for it.
    expect(s.linkSharing[0]!.sharedMs).toBeGreaterThan(0);
    expect(s.linkSharing[0]!.computeDelayMs).toBeGreaterThan(0);
    expect(s.linkSharingMs).toBeGreaterThan(0);
    expect(s.stepMs - u.stepMs).toBeCloseTo(s.linkSharingMs, 9);
    expect(s.exposedByGroup.dp - u.exposedByGroup.dp).toBeCloseTo(s.linkSharingMs, 9);
    // The rank-order machine finds the same shared link by itself.
    expect(assembleStep(setup, rankOrder, pricing).stepMs).toBeCloseTo(s.stepMs, 9);
  });
});
