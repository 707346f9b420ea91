import { describe, expect, it } from 'vitest';
import { gemmPeakFlops, gpus } from '../../../src/hardware/gpus.ts';
import { systems } from '../../../src/hardware/systems.ts';
import { castBytesPerElement, lowPrecisionRefusal } from '../../../src/megatron/low-precision.ts';
import type { TrainingSetup } from '../../../src/megatron/training-setup.ts';
import { defaultKernelOptions, type KernelOptions } from '../../../src/projection/layer/kernel-options.ts';
import { projectStep } from '../../../src/projection/step/cluster-projection.ts';

const sizes = { s: 4096, b: 1, h: 8192, heads: 64, groups: 8, ffn: 28672, vocab: 128256 };
const job: TrainingSetup = { sizes, tp: 8, sp: true, layers: 4, gpus: 8, globalBatch: 8, overlap: true };
const on = (system: 'dgx-b200' | 'dgx-h100' | 'dgx-a100', k: Partial<KernelOptions>) => ({
  system: systems[system],
  dtype: 'bf16' as const,
  kernels: { ...defaultKernelOptions, ...k },
});

describe('fp8 recipes and NVFP4 (transformer_config.py:566-672; Transformer Engine v2.9 quantization.py)', () => {
  it('refuses a recipe where Transformer Engine cannot run it, with its reason', () => {
    expect(lowPrecisionRefusal('delayed', 8.0)).toMatch(/8\.9 or higher.*:47-58/);
    expect(lowPrecisionRefusal('delayed', 8.9)).toBeUndefined();
    expect(lowPrecisionRefusal('blockwise', 9.0)).toBeUndefined();
    expect(lowPrecisionRefusal('mxfp8', 9.0)).toMatch(/10\.0 or higher required for MXFP8.*:61-67/);
    expect(lowPrecisionRefusal('nvfp4', 9.0)).toMatch(/NVFP4.*:71-75/);
    for (const r of ['delayed', 'tensorwise', 'blockwise', 'mxfp8', 'nvfp4'] as const)
      expect(lowPrecisionRefusal(r, 10.0)).toBeUndefined();
  });

  it('the casts cost least under delayed scaling and most under NVFP4 (amax, then two casts)', () => {
    const order = (['delayed', 'mxfp8', 'tensorwise', 'nvfp4'] as const).map((r) => castBytesPerElement(r, 2));
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(castBytesPerElement('blockwise', 2)).toBe(castBytesPerElement('mxfp8', 2));
  });

  it('fp4 GEMMs at the datasheet fp4 peak (B200 9 PF, GB200 10 PF dense); none below Blackwell', () => {
    expect(gemmPeakFlops(gpus.b200, 'fp4')).toBe(9e15);
    expect(gemmPeakFlops(gpus['gb200-gpu'], 'fp4')).toBe(1e16);
    expect(() => gemmPeakFlops(gpus['h100-sxm'], 'fp4')).toThrow(/no fp4 tensor cores/);
  });

  it('projects NVFP4 faster than fp8 on B200, tensorwise slower than delayed, and refuses the GPU that lacks the format', async () => {
    const fp8 = await projectStep(job, on('dgx-b200', { fp8: 'hybrid' }));
    const tensorwise = await projectStep(job, on('dgx-b200', { fp8: 'hybrid', fp8Recipe: 'tensorwise' }));
    const fp4 = await projectStep(job, on('dgx-b200', { fp4: 'e2m1' }));
    expect(tensorwise.stepMs).toBeGreaterThan(fp8.stepMs);
    expect(fp4.stepMs).toBeLessThan(fp8.stepMs);
    expect(fp4.modelFlopsPerStep).toBe(fp8.modelFlopsPerStep);
    await expect(projectStep(job, on('dgx-h100', { fp8: 'e4m3', fp8Recipe: 'mxfp8' }))).rejects.toThrow(/MXFP8/);
    await expect(projectStep(job, on('dgx-h100', { fp4: 'e2m1' }))).rejects.toThrow(/NVFP4/);
    await expect(projectStep(job, on('dgx-b200', { fp4: 'e2m1', fp8: 'hybrid' }))).rejects.toThrow(
      /arguments.py:1065-1066/,
    );
  });
});
