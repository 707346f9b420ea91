import { describe, expect, it } from 'vitest';
import { collectiveTimeUs } from '../../../../src/hardware/interconnect.ts';
import { systems } from '../../../../src/hardware/systems.ts';
import {
  allToAllUs,
  deepEpEfficiency,
  dispatchComm,
  expertLinks,
  remoteNodesPerToken,
} from '../../../../src/projection/links/expert-parallel.ts';

const dgx = systems['dgx-h100'];
const B = 64e6;

describe('the all-to-all on the EP group’s links', () => {
  it('inside a node: the bytes to the n − 1 peers over NVLink, one call and one hop', () => {
    const l = expertLinks(dgx, 8, 1);
    expect(l.epPerNode).toBe(8);
    const us = allToAllUs(dgx, 8, 8, B, l.intra, l.interGBps, l.interAlphaUs);
    expect(us).toBeCloseTo(dgx.collectiveBaseUs + dgx.intra.alphaUs + (B * 7) / 8 / (dgx.intra.busGBps * 1e3), 9);
  });
  it('across nodes: the off-node share on the GPU’s NIC bounds it', () => {
    const l = expertLinks(dgx, 16, 1);
    const us = allToAllUs(dgx, 16, 8, B, l.intra, l.interGBps, l.interAlphaUs);
    const nic = (B * 8) / 16 / (dgx.inter.nicGBps * 1e3);
    expect(us).toBeCloseTo(dgx.collectiveBaseUs + dgx.inter.alphaUs + nic, 9);
    expect(us).toBeGreaterThan(allToAllUs(dgx, 8, 8, B, l.intra, l.interGBps, l.interAlphaUs));
  });
  it('puts EP members ETP ranks apart: EP 8 at ETP 2 spans two nodes', () => {
    expect(expertLinks(dgx, 8, 2).epPerNode).toBe(4);
    expect(allToAllUs(dgx, 1, 1, B, dgx.intra, 50, 1)).toBe(0);
  });
});

describe('the dispatchers', () => {
  const v = { tokens: 4096, hidden: 4096, experts: 64, topk: 8, bytes: 2, routedRows: 4096 * 8, imbalance: 1 };
  it('allgather: an all-gather of [T, h] with the probs and the routing map over tp_ep', () => {
    const l = expertLinks(dgx, 8, 1);
    const c = dispatchComm(dgx, l, 'allgather', v);
    const perRank = 4096 * (4096 * 2 + 64 * 5);
    expect(c.exchangeUs).toBeCloseTo(
      dgx.collectiveBaseUs + collectiveTimeUs('allGather', perRank * 8, 8, l.tpEpLink),
      9,
    );
  });
  it('alltoall: the routed rows, and an ETP all-gather of what arrives when ETP > 1', () => {
    const c1 = dispatchComm(dgx, expertLinks(dgx, 8, 1), 'alltoall', v);
    expect(c1.etpUs).toBe(0);
    const c2 = dispatchComm(dgx, expertLinks(dgx, 4, 2), 'alltoall', v);
    expect(c2.etpUs).toBeGreaterThan(0);
    // Load imbalance scales what the busiest rank receives.
    const c3 = dispatchComm(dgx, expertLinks(dgx, 8, 1), 'alltoall', { ...v, imbalance: 2 });
    expect(c3.exchangeUs - dgx.collectiveBaseUs - dgx.intra.alphaUs).toBeCloseTo(
      2 * (c1.exchangeUs - dgx.collectiveBaseUs - dgx.intra.alphaUs),
      6,
    );
  });
  it('flex (DeepEP): each token crosses to a node once, at DeepEP’s measured share of the NIC', () => {
    expect(remoteNodesPerToken(8, 8, 8)).toBe(0);
    expect(remoteNodesPerToken(16, 8, 1)).toBeCloseTo(0.5, 12);
    expect(remoteNodesPerToken(32, 8, 8)).toBeCloseTo(3 * (1 - 0.75 ** 8), 12);
    const l = expertLinks(dgx, 32, 1);
    const flex = dispatchComm(dgx, l, 'flex', v);
    const inter = (4096 * 4096 * 2 * remoteNodesPerToken(32, 8, 8)) / (l.interGBps * deepEpEfficiency.inter * 1e3);
    expect(flex.exchangeUs).toBeGreaterThanOrEqual(inter);
    // Fewer bytes cross nodes than NCCL's all-to-all sends (k copies, (n − g)/n of them off-node).
    expect(flex.exchangeUs).toBeLessThan(dispatchComm(dgx, l, 'alltoall', v).exchangeUs);
  });
});
