import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import { ringAttention } from '../../../../src/projection/links/context-parallel.ts';
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
