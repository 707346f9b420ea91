import { describe, expect, it } from 'vitest';
import { defaultKernelOptions } from '../../../../src/projection/layer/kernel-options.ts';
import { narayanan17B, narayananFlops, narayananReported } from '../../../../src/megatron/scenarios.ts';
import { systems } from '../../../../src/hardware/systems.ts';
import { projectStep } from '../../../../src/projection/step/cluster-projection.ts';

/**
 * The projection against a published Megatron-LM measurement (Narayanan et al. 2021, Table 1,
 * 1.7B on 32 A100s: 137 TFLOP/s per GPU by their eq. (3), which counts the recomputed forward).
 * The projected step is converted with the same equation. The model leaves out what makes a
 * real run slower than its kernels (data loading, the loss-scale check and gradient clipping,
 * allocator and host overheads, NCCL kernels slowing the GEMMs they overlap), so it is expected
 * to be optimistic; the test pins the sign and keeps the error within 40%, the README reports it.
 */
describe('Narayanan et al. 2021, Table 1, 1.7B GPT on 32×A100', () => {
  it('is projected within 40% of the reported 137 TFLOP/s per GPU, on the optimistic side', async () => {
    const { sizes, layers, gpus, globalBatch } = narayanan17B.setup;
    const r = await projectStep(
      { ...narayanan17B.setup, tp: 1 },
      // 2021's Megatron-LM computed attention unfused (FlashAttention is from 2022): not the default auto.
      {
        system: systems[narayanan17B.system],
        dtype: narayanan17B.dtype,
        kernels: { ...defaultKernelOptions, attentionBackend: 'unfused' },
      },
    );
    const F = narayananFlops(globalBatch, sizes.s, layers, sizes.h, sizes.vocab);
    const projected = F / (gpus * r.stepMs * 1e-3) / 1e12;
    const error = projected / narayananReported.tflopsPerGpu - 1;
    console.log(
      `Narayanan 1.7B: projected step ${(r.stepMs / 1e3).toFixed(3)} s → ${projected.toFixed(1)} TFLOP/s per GPU (eq. 3) vs reported ${narayananReported.tflopsPerGpu}: error ${(100 * error).toFixed(1)}%`,
    );
    expect(error).toBeGreaterThan(0);
    expect(error).toBeLessThan(0.4);
  });
});
