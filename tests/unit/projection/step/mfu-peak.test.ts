import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import { seedsV100 } from '../../../../src/megatron/scenarios.ts';
import { defaultKernelOptions } from '../../../../src/projection/layer/kernel-options.ts';
import { projectStep } from '../../../../src/projection/step/cluster-projection.ts';

const setup = { ...seedsV100.setup, tp: 2 };

describe('MFU against the peak of the GEMMs’ format', () => {
  it('divides an fp8 run by the fp8 peak and states the bf16 figure beside it', async () => {
    const kernels = { ...defaultKernelOptions, fp8: 'hybrid' as const };
    const r = await projectStep(setup, { system: systems['dgx-h100'], dtype: 'bf16', kernels });
    const perGpuStep = setup.gpus * r.stepMs * 1e-3;
    // H100 SXM: 1979 fp8 and 989.5 bf16 dense TFLOP/s.
    expect(r.mfu).toBeCloseTo(r.modelFlopsPerStep / (perGpuStep * 1979e12), 12);
    expect(r.trainDtypeMfu).toBeCloseTo(r.modelFlopsPerStep / (perGpuStep * 989.5e12), 12);
    expect(r.executedMfu).toBeCloseTo(r.executedFlopsPerStep / (perGpuStep * 1979e12), 12);
  });

  it('gives one figure twice without fp8', async () => {
    const r = await projectStep(setup, { system: systems['dgx-h100'], dtype: 'bf16' });
    expect(r.mfu).toBe(r.trainDtypeMfu);
    expect(r.mfu).toBeCloseTo(r.modelFlopsPerStep / (setup.gpus * r.stepMs * 1e-3 * 989.5e12), 12);
  });
});
