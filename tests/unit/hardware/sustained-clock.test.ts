import { describe, expect, it } from 'vitest';
import { flashAttentionUs, flashEfficiency } from '../../../src/hardware/flash-attention.ts';
import { gpus } from '../../../src/hardware/gpus.ts';
import { gemmTime, kernelModel } from '../../../src/hardware/kernel-time.ts';
import { sustainedClockRatio } from '../../../src/hardware/sustained-clock.ts';

const h100 = gpus['h100-sxm'];
const b200 = gpus.b200;

describe('sustained clock', () => {
  it('is the measured MSMF over MAMF of a full node, 1 where none is published', () => {
    // mamf-finder, all 8 GPUs at once: H200 bf16 755.5 vs 852.1, B200 1437.5 vs 1746.7 TFLOP/s.
    expect(sustainedClockRatio(h100)).toBeCloseTo(755.5 / 852.1, 12);
    expect(sustainedClockRatio(gpus['h200-sxm'])).toBeCloseTo(755.5 / 852.1, 12);
    expect(sustainedClockRatio(b200)).toBeCloseTo(1437.5 / 1746.7, 12);
    expect(sustainedClockRatio(gpus['a100-sxm-80gb'])).toBe(1);
    expect(sustainedClockRatio(gpus['v100-pcie'])).toBe(1);
  });

  it('slows a compute-bound GEMM by the ratio and leaves an HBM-bound one alone', () => {
    const big = { M: 8192, N: 8192, K: 8192, batch: 1 };
    const burst = gemmTime(big, h100, 'bf16');
    const held = gemmTime(big, h100, 'bf16', kernelModel, 'sustained');
    expect(burst.memoryBound).toBe(false);
    // 16 waves of 256×128 tiles; each tile's main loop slows by r, its epilogue (the C tile,
    // 256·128·2 B at 0.83·3350/132 GB/s = 3.111 µs) leaves through HBM at the same speed.
    const r = sustainedClockRatio(h100);
    const epilogueUs = 16 * ((256 * 128 * 2) / ((0.83 * 3350e9) / 132)) * 1e6;
    expect(held.waves).toBe(16);
    expect(held.us - kernelModel.launchUs).toBeCloseTo(
      (burst.us - kernelModel.launchUs - epilogueUs) / r + epilogueUs,
      6,
    );
    // A GEMV reads its 128 MiB of weights from HBM whatever the SMs' clock.
    const gemv = { M: 1, N: 8192, K: 8192, batch: 1 };
    expect(gemmTime(gemv, h100, 'bf16', kernelModel, 'sustained').us).toBe(gemmTime(gemv, h100, 'bf16').us);
  });

  it('keeps an in-step GEMM below the sustained anchor: B200 bf16 at most 1437.5/2250 of peak', () => {
    for (const [M, N, K] of [
      [8192, 8192, 8192],
      [1792, 16128, 3072],
      [16384, 28672, 8192],
    ] as const) {
      const g = gemmTime({ M, N, K, batch: 1 }, b200, 'bf16', kernelModel, 'sustained');
      expect(g.efficiency, `${M}×${N}×${K}`).toBeLessThanOrEqual((1745 / 2250) * (1437.5 / 1746.7));
    }
  });

  it('slows FlashAttention by the ratio too', () => {
    const burst = flashAttentionUs(1e12, 128, 'forward', h100, 'bf16');
    const held = flashAttentionUs(1e12, 128, 'forward', h100, 'bf16', kernelModel, undefined, 'sustained');
    expect((held - kernelModel.launchUs) * sustainedClockRatio(h100)).toBeCloseTo(burst - kernelModel.launchUs, 6);
  });
});

describe('FlashAttention on Blackwell', () => {
  it("takes its level from FlashAttention-4's B200 measurement, not Hopper's fraction", () => {
    // FA4: 1613 of 2250 TFLOP/s; FA3: 740 of 989.5 — Blackwell's fraction is Hopper's × 0.959.
    const k = 1613 / 2250 / (740 / 989.5);
    expect(flashEfficiency(b200, 'forward', 256)).toBeCloseTo(1613 / 2250, 9);
    expect(flashEfficiency(b200, 'forward', 128)).toBeCloseTo((648 / 989.5) * k, 9);
    expect(flashEfficiency(b200, 'backward', 128, { seq: 4096, kernel: 'fused' })).toBeCloseTo((499 / 989.5) * k, 9);
    expect(flashEfficiency(b200, 'forward', 128)).toBeLessThan(flashEfficiency(h100, 'forward', 128));
  });
});
