import { describe, expect, it } from 'vitest';
import { parseSystem, systems } from '../../../../src/hardware/systems.ts';
import { projectedCommSource, tpGroupLink } from '../../../../src/projection/layer/projected-layer.ts';

/**
 * The caption names the link the projection prices: a TP group of t ≤ GPUs per node stays on the
 * intra-node link; a larger one crosses the network (InfiniBand HDR for a custom machine).
 */
describe('projected communication source', () => {
  const small = parseSystem('custom:a100-sxm-80gb:4:2:100'); // 4 GPUs per node
  const machine = { system: small, dtype: 'bf16' as const };

  it('names the intra-node link while the TP group fits in a node', () => {
    expect(tpGroupLink(small, 4)).toBe(small.intra);
    const text = projectedCommSource(machine, 4);
    expect(text).toContain(small.intra.label);
    expect(text).not.toContain('InfiniBand');
  });

  it('names the inter-node network, and the nodes spanned, when t exceeds GPUs per node', () => {
    const link = tpGroupLink(small, 8);
    expect(link).not.toBe(small.intra);
    const text = projectedCommSource(machine, 8);
    expect(text).toContain(link.label);
    expect(text).toContain('InfiniBand HDR');
    expect(text).toContain('spans 2 nodes of 4 GPUs');
    expect(text).not.toContain(small.intra.label);
  });

  it('keeps an 8-GPU catalog box on its intra-node link at t = 8', () => {
    const box = systems['v100-pcie-8'];
    expect(projectedCommSource({ system: box, dtype: 'fp16' }, 8)).toContain(box.intra.label);
  });
});
