import { describe, expect, it } from 'vitest';
import { gpus } from '../../../src/hardware/gpus.ts';
import { flashAttentionUs, flashEfficiency } from '../../../src/hardware/flash-attention.ts';
import { dispatchGapsUs } from '../../../src/hardware/host-dispatch.ts';
import { kernelModel } from '../../../src/hardware/kernel-time.ts';
import { commFootprint, overlapSlowdown, overlappedKernelUs } from '../../../src/hardware/overlap-cost.ts';

const h100 = gpus['h100-sxm'];

describe('dispatchGapsUs (host dispatch, eager)', () => {
  it('leaves the host cost minus the device time idle when every kernel is shorter than its dispatch', () => {
    // h = 10, d = 2 each: in steady state the GPU waits 8 µs before each kernel (Σh = 20 per pass).
    expect(
      dispatchGapsUs(
        [
          { deviceUs: 2, hostUs: 10 },
          { deviceUs: 2, hostUs: 10 },
        ],
        1,
      ),
    ).toEqual([10, 8]);
    expect(
      dispatchGapsUs(
        [
          { deviceUs: 2, hostUs: 10 },
          { deviceUs: 2, hostUs: 10 },
        ],
        3,
      ),
    ).toEqual([8, 8]);
  });

  it('hides the dispatch once a long kernel lets the CPU run ahead', () => {
    // Pass 1: the 100 µs kernel starts at 10 and ends at 110; the CPU has issued all three by 30.
    // From pass 2 on the queue is never empty: no gaps.
    const ops = [
      { deviceUs: 100, hostUs: 10 },
      { deviceUs: 2, hostUs: 10 },
      { deviceUs: 2, hostUs: 10 },
    ];
    expect(dispatchGapsUs(ops, 1)).toEqual([10, 0, 0]);
    expect(dispatchGapsUs(ops, 3)).toEqual([0, 0, 0]);
  });
});

describe('FlashAttention time', () => {
  it('runs at the FA3 forward rate on H100 at head dim 128', () => {
    expect(flashEfficiency(h100, 'forward', 128)).toBeCloseTo(648 / 989.5, 9);
    // 1 TFLOP at 648 TFLOP/s = 1543.2 µs, plus the launch.
    expect(flashAttentionUs(1e12, 128, 'forward', h100, 'bf16')).toBeCloseTo(1e6 / 648 + kernelModel.launchUs, 6);
  });

  it('interpolates between head dims and scales the backward by FA2’s backward/forward ratio', () => {
    expect(flashEfficiency(h100, 'forward', 96)).toBeCloseTo((497 + 648) / 2 / 989.5, 9);
    expect(flashEfficiency(h100, 'backward', 128)).toBeCloseTo((648 / 989.5) * (0.63 / 0.73), 9);
    // With the job's sequence and library (FA3 paper, Figs. 5–6, head dim 128, TFLOP/s of 989.5):
    // cuDNN causal forward at 4k 518, backward 499; FA3 causal forward at 16k 616; 3k lies
    // log₂(3000/2048) = 0.5503 of the way from 2k (484) to 4k (518).
    expect(flashEfficiency(h100, 'forward', 128, { seq: 4096, kernel: 'fused' })).toBeCloseTo(518 / 989.5, 9);
    expect(flashEfficiency(h100, 'backward', 128, { seq: 4096, kernel: 'fused' })).toBeCloseTo(499 / 989.5, 9);
    expect(flashEfficiency(h100, 'forward', 128, { seq: 16384, kernel: 'flash' })).toBeCloseTo(616 / 989.5, 9);
    expect(flashEfficiency(h100, 'forward', 128, { seq: 3000, kernel: 'fused' })).toBeCloseTo(
      (484 + Math.log2(3000 / 2048) * (518 - 484)) / 989.5,
      9,
    );
    // Ampere keeps FlashAttention-2's figure whatever the sequence.
    expect(flashEfficiency(gpus['a100-sxm-80gb'], 'forward', 128, { seq: 1024, kernel: 'flash' })).toBe(0.73);
    expect(flashEfficiency(gpus['a100-sxm-80gb'], 'forward', 128)).toBe(0.73);
    expect(flashEfficiency(gpus['a100-sxm-80gb'], 'backward', 256)).toBe(0.63);
  });

  it('refuses V100 and fp32 with what to change', () => {
    expect(() => flashEfficiency(gpus['v100-pcie'], 'forward', 64)).toThrow(/Ampere or newer.*unfused/);
    expect(() => flashAttentionUs(1e9, 128, 'forward', h100, 'fp32')).toThrow(/fp16 or bf16/);
  });
});

describe('overlap cost', () => {
  it('slows a compute-bound kernel by SMs/(SMs − comm SMs) while the collective runs', () => {
    const foot = commFootprint('allReduce', 370, 16);
    const f = overlapSlowdown(false, h100, foot);
    expect(f).toBeCloseTo(132 / 116, 9);
    // 100 µs under a 50 µs collective: 50 µs at 116/132 speed, the rest at full: 100 + 50·(1 − 116/132).
    expect(overlappedKernelUs(100, 50, f)).toBeCloseTo(100 + 50 * (1 - 116 / 132), 9);
    // All of it under a longer collective: f·t.
    expect(overlappedKernelUs(10, 50, f)).toBeCloseTo(10 * f, 9);
  });

  it('slows a memory-bound kernel by the HBM bandwidth the collective takes', () => {
    // All-reduce at 370 GB/s bus: 3 × 370 = 1110 GB/s of HBM; H100 streams 0.83 × 3350 = 2780.5.
    const f = overlapSlowdown(true, h100, commFootprint('allReduce', 370, 16));
    expect(f).toBeCloseTo(2780.5 / (2780.5 - 1110), 9);
    expect(commFootprint('allGather', 100, 1).hbmGBps).toBe(200);
  });
});
