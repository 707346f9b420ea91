import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import { weightCopyBytes } from '../../../../src/megatron/low-precision.ts';
import type { TrainingSetup } from '../../../../src/megatron/training-setup.ts';
import { defaultKernelOptions, type KernelOptions } from '../../../../src/projection/layer/kernel-options.ts';
import { projectStep } from '../../../../src/projection/step/cluster-projection.ts';

const sizes = { s: 2048, b: 1, h: 2048, heads: 16, groups: 4, ffn: 5632, vocab: 32000 };
const job: TrainingSetup = { sizes, tp: 2, sp: true, layers: 4, gpus: 8, globalBatch: 8, overlap: true };
const distOpt = { distributedOptimizer: true };
const on = (k: Partial<KernelOptions>, system: 'dgx-h100' | 'dgx-b200' = 'dgx-h100') => ({
  system: systems[system],
  dtype: 'bf16' as const,
  kernels: { ...defaultKernelOptions, ...k },
});
// One layer's TP shard: QKV h·(h + 2·h·g/n), proj h², SwiGLU 3·h·F over t = 2, and the two norms' 2h.
const layerParams = (2048 * (2048 + 1024) + 2048 * 2048 + 3 * 2048 * 5632) / 2 + 2 * 2048;

describe('fp8 weight copies and --fp8-param-gather (transformer_config.py:581-586, arguments.py:1060-1062)', () => {
  it('fp8 keeps a quantized copy and its transpose of every layer weight: 2 bytes per parameter under delayed scaling', async () => {
    const bf16 = await projectStep({ ...job, ...distOpt }, on({}));
    const fp8 = await projectStep({ ...job, ...distOpt }, on({ fp8: 'hybrid' }));
    expect(fp8.memory.totalBytes - bf16.memory.totalBytes).toBe(4 * layerParams * weightCopyBytes('delayed'));
    const mx = await projectStep({ ...job, ...distOpt }, on({ fp8: 'e4m3', fp8Recipe: 'mxfp8' }, 'dgx-b200'));
    const mxBf16 = await projectStep({ ...job, ...distOpt }, on({}, 'dgx-b200'));
    expect(mx.memory.totalBytes - mxBf16.memory.totalBytes).toBeCloseTo(4 * layerParams * (2 + 2 / 32), 0);
  });

  it('--fp8-param-gather holds the fp8 copies as the parameters: the 16-bit layer weights go', async () => {
    const fp8 = await projectStep({ ...job, ...distOpt }, on({ fp8: 'hybrid' }));
    const params = await projectStep({ ...job, ...distOpt, fp8ParamGather: true }, on({ fp8: 'hybrid' }));
    expect(fp8.memory.totalBytes - params.memory.totalBytes).toBe(4 * layerParams * 2);
    // Its time (the 1-byte gather, the casts) is quantized-params.test.ts's.
  });

  it("refuses it with Megatron's reasons: without fp8, without a sharded optimizer, with the offload off delayed", async () => {
    await expect(projectStep({ ...job, ...distOpt, fp8ParamGather: true }, on({}))).rejects.toThrow(/1439-1440/);
    await expect(projectStep({ ...job, fp8ParamGather: true }, on({ fp8: 'hybrid' }))).rejects.toThrow(/1060-1062/);
    const offload = { fraction: 1, overlapD2hH2d: false };
    await expect(
      projectStep(
        { ...job, ...distOpt, fp8ParamGather: true, optimizerCpuOffload: offload },
        on({ fp8: 'hybrid', fp8Recipe: 'tensorwise' }),
      ),
    ).rejects.toThrow(/1808-1810/);
  });
});
