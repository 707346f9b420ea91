import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import type { TrainingSetup } from '../../../../src/megatron/training-setup.ts';
import { projectStep } from '../../../../src/projection/step/cluster-projection.ts';
import { checkOptimizerCpuOffload, offloadedStepMs } from '../../../../src/projection/step/optimizer-offload.ts';

const h100 = systems['dgx-h100'];
const setup: TrainingSetup = {
  sizes: { s: 2048, b: 1, h: 2048, heads: 16, groups: 4, ffn: 5632, vocab: 32000 },
  tp: 2,
  sp: true,
  layers: 4,
  gpus: 8,
  globalBatch: 8,
  overlap: true,
};

describe('--optimizer-cpu-offload (hybrid_optimizer.py, core_v0.19.0)', () => {
  it('prices the fp32 gradient copy out, the CPU Adam at the host DRAM share and the copy back', () => {
    // DGX H100: PCIe Gen5 64 GB/s each way; 2 sockets × 8 channels × DDR5-4800 × 8 B / 8 GPUs = 76.8 GB/s.
    expect([h100.host!.linkGBps, h100.host!.dramGBps]).toEqual([64, 76.8]);
    const P = 1e9;
    const t = offloadedStepMs(P, { fraction: 1, overlapD2hH2d: false }, h100);
    expect(t.d2hMs).toBeCloseTo((4 * P) / 64e6, 9);
    expect(t.cpuMs).toBeCloseTo((28 * P) / 76.8e6, 9);
    expect(t.addedMs).toBeCloseTo(2 * t.d2hMs + t.cpuMs, 9);
    const overlapped = offloadedStepMs(P, { fraction: 0.5, overlapD2hH2d: true }, h100);
    expect(overlapped.addedMs).toBeCloseTo(t.cpuMs / 2, 9);
    // GB200: NVLink-C2C, 450 GB/s each way, so the copies shrink 7×.
    expect(offloadedStepMs(P, { fraction: 1, overlapD2hH2d: false }, systems['gb200-nvl72']).d2hMs).toBeCloseTo(
      (4 * P) / 450e6,
      9,
    );
  });

  it('moves f of the main weights and moments off the GPU and lengthens the step by the host terms', async () => {
    const base = await projectStep(setup, { system: h100, dtype: 'bf16' });
    const off = await projectStep(
      { ...setup, optimizerCpuOffload: { fraction: 0.5, overlapD2hH2d: false } },
      { system: h100, dtype: 'bf16' },
    );
    const P = base.stageParams[0]!;
    expect(base.memory.optimizerBytes - off.memory.optimizerBytes).toBeCloseTo(0.5 * 12 * P, 0);
    const host = offloadedStepMs(P, { fraction: 0.5, overlapD2hH2d: false }, h100).addedMs;
    expect(off.optimizerMs).toBeCloseTo(base.optimizerMs / 2 + host, 9);
    expect(off.stepMs - base.stepMs).toBeCloseTo(off.optimizerMs - base.optimizerMs, 6);
  });

  it('refuses what Megatron refuses, and a system whose host is not known', async () => {
    expect(() => checkOptimizerCpuOffload({ fraction: 1, overlapD2hH2d: false }, false)).toThrow(
      /--use-precision-aware-optimizer.*arguments.py:1803-1807/,
    );
    expect(() => checkOptimizerCpuOffload({ fraction: 1.5, overlapD2hH2d: false }, true)).toThrow(
      /from 0 to 1.*hybrid_optimizer.py/,
    );
    expect(() => checkOptimizerCpuOffload({ fraction: 0, overlapD2hH2d: false }, true)).not.toThrow();
    await expect(
      projectStep(
        { ...setup, sp: false, optimizerCpuOffload: { fraction: 1, overlapD2hH2d: false } },
        { system: systems['v100-pcie-8'], dtype: 'fp16' },
      ),
    ).rejects.toThrow(/no host link/);
  });
});
