import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import { cpExchangeRefusals } from '../../../../src/megatron/cp-comm-type.ts';
import { cpAttention, ringAttention } from '../../../../src/projection/links/context-parallel.ts';
import { p2pUs } from '../../../../src/projection/links/group-links.ts';

const h100 = systems['dgx-h100'];
const link = h100.intra;

describe('ring attention (context parallelism)', () => {
  it('adds nothing at cp = 1', () => {
    expect(ringAttention(1, { forwardMs: 1, backwardMs: 2 }, 1e6, link, h100)).toEqual({
      forwardMs: 0,
      backwardMs: 0,
      commMs: 0,
      exposedMs: 0,
      exposedForwardMs: 0,
    });
  });

  it('runs cp − 1 extra blocks and hides each K, V send under one block', () => {
    // Blocks far longer than a send: only the extra blocks' compute is added.
    const r = ringAttention(4, { forwardMs: 10, backwardMs: 20 }, 1e6, link, h100);
    expect(r.forwardMs).toBeCloseTo(30, 9);
    expect(r.backwardMs).toBeCloseTo(60, 9);
    expect(r.exposedMs).toBe(0);
    const send = p2pUs(h100, link, 1e6) / 1e3;
    const sendBack = p2pUs(h100, link, 2e6) / 1e3;
    expect(r.commMs).toBeCloseTo(3 * (send + sendBack), 9);
  });

  it('exposes what a send takes beyond its block: (cp − 1)·(send − block)', () => {
    const bytes = 1e9; // ≈ 2.7 ms on NVLink 4, against 1 µs blocks
    const r = ringAttention(2, { forwardMs: 0.001, backwardMs: 0.001 }, bytes, link, h100);
    const send = p2pUs(h100, link, bytes) / 1e3;
    const sendBack = p2pUs(h100, link, 2 * bytes) / 1e3;
    expect(r.exposedMs).toBeCloseTo(send - 0.001 + (sendBack - 0.001), 9);
    expect(r.forwardMs).toBeCloseTo(send, 9);
    expect(r.exposedForwardMs).toBeCloseTo(send - 0.001, 9);
  });
});

describe('--cp-comm-type: the all-to-all, all-gather and hierarchical exchanges', () => {
  const core = { forwardMs: 10, backwardMs: 20 };
  const bytes = { q: 8e6, kv: 4e6 };
  // One call: NCCL base + (n − 1)(α + S/(n·B)) on NVLink (α, B of the intra link), ms.
  const call = (n: number, payload: number): number =>
    (h100.collectiveBaseUs + (n - 1) * (link.alphaUs + payload / n / (link.busGBps * 1e3))) / 1e3;

  it('p2p is the ring', () => {
    expect(cpAttention({ type: 'p2p' }, 4, core, bytes, { cp: link }, h100)).toEqual(
      ringAttention(4, core, bytes.kv, link, h100),
    );
  });

  it('a2a: cp − 1 further blocks and four all-to-alls (QKV, O; dO, dQKV), all exposed', () => {
    const r = cpAttention({ type: 'a2a' }, 4, core, bytes, { cp: link }, h100);
    const f = call(4, bytes.q + bytes.kv) + call(4, bytes.q);
    expect(r.commMs).toBeCloseTo(2 * f, 12);
    expect(r.exposedMs).toBeCloseTo(2 * f, 12);
    expect(r.exposedForwardMs).toBeCloseTo(f, 12);
    expect(r.forwardMs).toBeCloseTo(30 + f, 12);
    expect(r.backwardMs).toBeCloseTo(60 + f, 12);
  });

  it('allgather: K, V gathered forward and again backward, dK, dV reduce-scattered, all exposed', () => {
    const r = cpAttention({ type: 'allgather' }, 4, core, bytes, { cp: link }, h100);
    const ag = call(4, 4 * bytes.kv);
    expect(r.exposedForwardMs).toBeCloseTo(ag, 12);
    expect(r.exposedMs).toBeCloseTo(3 * ag, 12); // a reduce-scatter of the same bytes costs an all-gather's
    expect(r.forwardMs).toBeCloseTo(30 + ag, 12);
  });

  it('a2a+p2p [2, 2]: one a2a of 2, then the ring of 2 on blocks twice as long; the same compute in all', () => {
    const r = cpAttention({ type: 'a2a+p2p', hierarchical: [2, 2] }, 4, core, bytes, { cp: link }, h100);
    const e = call(2, bytes.q + bytes.kv) + call(2, bytes.q);
    const ring = ringAttention(2, { forwardMs: 20, backwardMs: 40 }, bytes.kv, link, h100);
    // Further compute: (a − 1)·core + (r − 1)·a·core = 3 blocks, as the other types.
    expect(r.forwardMs).toBeCloseTo(10 + ring.forwardMs + e, 12);
    expect(r.forwardMs - e).toBeCloseTo(30, 12);
    expect(r.exposedMs).toBeCloseTo(ring.exposedMs + 2 * e, 12);
    // [1, cp] is the ring.
    expect(cpAttention({ type: 'a2a+p2p', hierarchical: [1, 4] }, 4, core, bytes, { cp: link }, h100)).toEqual(
      ringAttention(4, core, bytes.kv, link, h100),
    );
  });

  it('refuses what Megatron and TE refuse, saying what to write', () => {
    expect(cpExchangeRefusals({ type: 'a2a' }, 4, 8, 2)).toEqual([
      expect.stringMatching(/8 query and 2 KV heads .* multiples of it/),
    ]);
    expect(cpExchangeRefusals({ type: 'a2a' }, 2, 8, 2)).toEqual([]);
    expect(cpExchangeRefusals({ type: 'a2a+p2p' }, 4, 8, 8)).toEqual([
      expect.stringMatching(/--hierarchical-context-parallel-sizes whose product is cp \(4\)/),
    ]);
    expect(cpExchangeRefusals({ type: 'allgather', hierarchical: [2, 2] }, 4, 8, 8)).toEqual([
      expect.stringMatching(/goes with --cp-comm-type a2a\+p2p/),
    ]);
    expect(cpExchangeRefusals({ type: 'a2a+p2p', hierarchical: [2, 2] }, 4, 8, 1)).toHaveLength(1);
  });
});
