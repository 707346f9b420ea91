import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import { seedsV100 } from '../../../../src/megatron/scenarios.ts';
import { projectStep } from '../../../../src/projection/step/cluster-projection.ts';
import { tiedEmbeddingAllReduceMs } from '../../../../src/projection/step/tied-embedding.ts';

const h100 = systems['dgx-h100'];
const { intra } = h100;
/** A ring all-reduce of S bytes over 2 ranks: base + 2·(α + (S/2)/B), µs → ms. */
const pairAllReduceMs = (bytes: number, link: { alphaUs: number; busGBps: number } = intra): number =>
  (h100.collectiveBaseUs + 2 * (link.alphaUs + bytes / 2 / (link.busGBps * 1e3))) / 1e3;

describe('tiedEmbeddingAllReduceMs: the embedding gradient between the first and last stage', () => {
  const P = 25_000_000;
  it('all-reduces P·4 bytes (bf16 training keeps fp32 gradients) in a group of 2', () => {
    expect(tiedEmbeddingAllReduceMs(true, 2, 50304, P, 'bf16', intra, h100)).toBeCloseTo(pairAllReduceMs(P * 4), 12);
  });
  it('is a pair at every p > 2 too (the first and last stage, not the p stages)', () => {
    for (const p of [3, 4, 8])
      expect(tiedEmbeddingAllReduceMs(true, p, 50304, P, 'bf16', intra, h100)).toBeCloseTo(pairAllReduceMs(P * 4), 12);
  });
  it('is 0 untied, with one stage, or without a vocabulary', () => {
    expect(tiedEmbeddingAllReduceMs(false, 4, 50304, P, 'bf16', intra, h100)).toBe(0);
    expect(tiedEmbeddingAllReduceMs(true, 1, 50304, P, 'bf16', intra, h100)).toBe(0);
    expect(tiedEmbeddingAllReduceMs(true, 4, 0, P, 'bf16', intra, h100)).toBe(0);
  });
});

describe('a tied embedding at p > 2 in the step', () => {
  const { vocab, h } = seedsV100.setup.sizes;
  const setup = (pp: number, gpus: number) => ({
    ...seedsV100.setup,
    tp: 2,
    layers: 8,
    pp,
    gpus,
    tiedEmbeddings: true,
  });
  it('t 2, p 4 on one DGX H100: ranks {0, 6} and {1, 7} all-reduce [V/2, h] over NVSwitch', async () => {
    const r = await projectStep(setup(4, 8), { system: h100, dtype: 'bf16' });
    expect(r.degrees).toMatchObject({ tp: 2, pp: 4, dp: 1 });
    expect(r.embeddingAllReduceMs).toBeCloseTo(pairAllReduceMs((vocab / 2) * h * 4), 12);
  });
  it('t 2, p 8 on two: {0, 14} crosses nodes, one NIC per GPU', async () => {
    const r = await projectStep(setup(8, 16), { system: h100, dtype: 'bf16' });
    const nic = { alphaUs: h100.inter.alphaUs, busGBps: Math.min(intra.busGBps, h100.inter.nicGBps) };
    expect(r.embeddingAllReduceMs).toBeCloseTo(pairAllReduceMs((vocab / 2) * h * 4, nic), 12);
  });
});
