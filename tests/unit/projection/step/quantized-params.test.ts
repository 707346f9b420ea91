import { describe, expect, it } from 'vitest';
import { gpus } from '../../../../src/hardware/gpus.ts';
import { collectiveTimeUs } from '../../../../src/hardware/interconnect.ts';
import { kernelModel, memoryBoundUs } from '../../../../src/hardware/kernel-time.ts';
import { systems } from '../../../../src/hardware/systems.ts';
import {
  amaxReduceBytesPerElement,
  quantizedGatherBytes,
  quantizedParamCastBytes,
  weightCastBytes,
} from '../../../../src/megatron/low-precision.ts';
import type { TrainingSetup } from '../../../../src/megatron/training-setup.ts';
import { defaultKernelOptions, type KernelOptions } from '../../../../src/projection/layer/kernel-options.ts';
import { moeCompute, termsUs } from '../../../../src/projection/layer/moe-layer.ts';
import { mixtralLikeShapes } from '../../../moe-fixtures.ts';
import { groupLinks } from '../../../../src/projection/links/group-links.ts';
import { projectStep } from '../../../../src/projection/step/cluster-projection.ts';
import { stepLowerBounds } from '../../../../src/projection/step/chunk-times.ts';
import { priceLayers } from '../../../../src/projection/step/layer-pricing.ts';
import { budgetLines } from '../../../../src/projection/step/cluster-summary.ts';
import { lowPrecisionLines } from '../../../../scripts/project/low-precision-report.ts';

// t 2 SP, 4 layers, 8 GPUs on one H100 node: DP 4, p 1, one bucket (no --overlap-grad-reduce).
const sizes = { s: 2048, b: 1, h: 2048, heads: 16, groups: 4, ffn: 5632, vocab: 32000 };
const job: TrainingSetup = {
  sizes,
  tp: 2,
  sp: true,
  layers: 4,
  gpus: 8,
  globalBatch: 8,
  overlap: true,
  distributedOptimizer: true,
};
const on = (k: Partial<KernelOptions>, system: 'dgx-h100' | 'dgx-b200' = 'dgx-h100') => ({
  system: systems[system],
  dtype: 'bf16' as const,
  kernels: { ...defaultKernelOptions, ...k },
});
// One layer's TP shard: QKV h·(h + 2·h·g/n), proj h², SwiGLU 3·h·F over t = 2, and the two norms' 2h.
const layerParams = (2048 * (2048 + 1024) + 2048 * 2048 + 3 * 2048 * 5632) / 2 + 2 * 2048;
const L = 4 * layerParams;

describe('the quantized parameters and weight casts, per element (low-precision.ts)', () => {
  it('gathers 1 byte per fp8 element, 2 for mxfp8 (the bf16 view of the gradient buffer), ½ for NVFP4; scales travel apart', () => {
    expect(['delayed', 'tensorwise', 'blockwise'].map((r) => quantizedGatherBytes(r as 'delayed'))).toEqual([1, 1, 1]);
    expect(quantizedGatherBytes('mxfp8')).toBe(2);
    expect(quantizedGatherBytes('nvfp4')).toBe(0.5);
    // The amaxes all-reduced before the master cast: one fp32 per 128×128 block, per 32 each way, per 16×16 block.
    expect(amaxReduceBytesPerElement('delayed')).toBe(0);
    expect(amaxReduceBytesPerElement('blockwise')).toBe(4 / 16384);
    expect(amaxReduceBytesPerElement('mxfp8')).toBe(0.25);
    expect(amaxReduceBytesPerElement('nvfp4')).toBe(1 / 64);
  });

  it('casts a bf16 weight once per step: delayed 2 read + 1 + 1 written, tensorwise one more read, NVFP4 its amax read and ½ + ½', () => {
    expect(weightCastBytes('delayed', 2)).toBe(4);
    expect(weightCastBytes('tensorwise', 2)).toBe(6);
    expect(weightCastBytes('mxfp8', 2)).toBe(4 + 1 / 16);
    expect(weightCastBytes('nvfp4', 2)).toBe(5 + 2 / 256);
  });

  it('with quantized parameters casts the master shard (fp32 → bf16 → fp8) and builds the columnwise copy of the gathered weight', () => {
    // 4 read + 2 written + 2 read + 1 written; tensorwise reads the bf16 shard once more for its amax.
    expect(quantizedParamCastBytes('delayed', 2)).toEqual({ shard: 9, full: 2 });
    expect(quantizedParamCastBytes('tensorwise', 2)).toEqual({ shard: 11, full: 2 });
    expect(quantizedParamCastBytes('nvfp4', 2)).toEqual({ shard: 10.5, full: 1 + 2 / 256 });
    // MXFP8: the fp32 master into the bf16 buffer, then the whole gathered weight re-quantized.
    expect(quantizedParamCastBytes('mxfp8', 2)).toEqual({ shard: 6, full: 4 + 1 / 16 });
  });
});

describe('--fp8-param-gather and --fp4-param-gather in the step (quantized-params.ts)', () => {
  it('all-gathers the layer parameters at 1 byte and the rest at 2, casts the shard, and adds the amax all-reduce', async () => {
    const fp8 = await projectStep(job, on({ fp8: 'hybrid' }));
    const pg = await projectStep({ ...job, fp8ParamGather: true }, on({ fp8: 'hybrid' }));
    const P = pg.stageParams[0]!;
    expect(pg.dpCommMs.paramGatherBytesPerParam).toBeCloseTo((L + 2 * (P - L)) / P, 12);
    expect(fp8.dpCommMs.paramGatherBytesPerParam).toBe(2);
    const sys = systems['dgx-h100'];
    const link = groupLinks(sys, pg.degrees).dpCp;
    const gather = (bytes: number): number =>
      (sys.collectiveBaseUs + collectiveTimeUs('allGather', bytes, 4, link)) / 1e3;
    expect(pg.dpCommMs.paramGatherMs).toBeCloseTo(gather(L + 2 * (P - L)), 9);
    expect(fp8.dpCommMs.paramGatherMs).toBeCloseTo(gather(2 * P), 9);
    // Casts: 4 bytes per layer parameter without; 9/4 on the shard (d = 4) + 2 on the whole weight with.
    expect(fp8.weightCast!.castBytes).toBeCloseTo(4 * L, 3);
    expect(pg.weightCast!.castBytes).toBeCloseTo((9 / 4 + 2) * L, 3);
    expect(pg.weightCast!.castMs).toBeCloseTo(memoryBoundUs((9 / 4 + 2) * L, sys.gpu) / 1e3, 9);
    const amax = (sys.collectiveBaseUs + collectiveTimeUs('allReduce', 0, 4, link)) / 1e3;
    expect(pg.weightCast!.amaxReduceMs).toBeCloseTo(amax, 9);
    expect(fp8.weightCast!.amaxReduceMs).toBe(0);
    // The optimizer keeps no bf16 copy of the quantized layer weights (distrib_optimizer.py:2868-2874):
    // their 2 + 2 bytes of weight read and write leave its shard L/4 (the master cast above writes them).
    const hbmMs = (bytes: number): number => (bytes / (kernelModel.hbmEfficiency * sys.gpu.hbmGBps * 1e9)) * 1e3;
    expect(fp8.optimizerMs - pg.optimizerMs).toBeCloseTo(hbmMs((L / 4) * 2 * 2), 9);
    // Without --overlap-param-gather the whole gather is on the step's path.
    expect(pg.stepMs - fp8.stepMs).toBeCloseTo(
      pg.weightCast!.castMs -
        fp8.weightCast!.castMs +
        amax +
        pg.dpCommMs.paramGatherMs -
        fp8.dpCommMs.paramGatherMs +
        pg.optimizerMs -
        fp8.optimizerMs,
      9,
    );
    expect(pg.stepMs).toBeLessThan(fp8.stepMs);
    // The table's rows (and npm run project --json) carry them.
    const [line] = budgetLines([{ tp: 2, ok: true, step: pg }]);
    expect(line).toMatchObject({ dpCommMs: pg.dpCommMs, weightCast: pg.weightCast });
    // npm run project's weights line (scripts/project/low-precision-report.ts).
    expect(lowPrecisionLines(2, pg)).toEqual([
      `weights at t=2 (delayed, quantized parameters): casts ${pg.weightCast!.castMs.toFixed(2)} ms per step ` +
        `(${(pg.weightCast!.castBytes / 2 ** 30).toFixed(2)} GiB through HBM), amax all-reduce ${amax.toFixed(2)} ms; ` +
        `DP per step, hidden or not: gradient sync ${pg.dpCommMs.gradMs.toFixed(2)} ms, ` +
        `parameter all-gather ${pg.dpCommMs.paramGatherMs.toFixed(2)} ms at ${((L + 2 * (P - L)) / P).toFixed(2)} B/parameter`,
    ]);
    expect(lowPrecisionLines(2, await projectStep(job, on({})))).toEqual([]);
  });

  it('gathers NVFP4 parameters at ½ byte; refuses --fp4-param-gather without --fp4-format (arguments.py:1069-1070) or the distributed optimizer', async () => {
    const pg = await projectStep({ ...job, fp4ParamGather: true }, on({ fp4: 'e2m1' }, 'dgx-b200'));
    const P = pg.stageParams[0]!;
    expect(pg.dpCommMs.paramGatherBytesPerParam).toBeCloseTo((L / 2 + 2 * (P - L)) / P, 12);
    // The advisor's memory bound stays below the step's peak with the ½ + ½-byte NVFP4 parameters in place of bf16.
    const machine = on({ fp4: 'e2m1' }, 'dgx-b200');
    const setup = { ...job, fp4ParamGather: true };
    const bound = stepLowerBounds(setup, machine, await priceLayers(setup, machine));
    const plain = stepLowerBounds(job, machine, await priceLayers(job, machine));
    expect(plain.memoryBytes - bound.memoryBytes).toBeCloseTo(L * (2 - 1 - 2 / 256), 3);
    expect(bound.memoryBytes).toBeLessThanOrEqual(pg.memory.totalBytes);
    await expect(projectStep({ ...job, fp4ParamGather: true }, on({}, 'dgx-b200'))).rejects.toThrow(/1069-1070/);
    await expect(
      projectStep({ ...job, distributedOptimizer: false, fp4ParamGather: true }, on({ fp4: 'e2m1' }, 'dgx-b200')),
    ).rejects.toThrow(/not priced/);
  });
});

describe("the MoE expert GEMMs' casts (moe-layer.ts)", () => {
  const x = mixtralLikeShapes;
  const h100 = gpus['h100-sxm'];
  it("quantize the grouped GEMMs' inputs and output gradients: 8,192 rows × (h, F) forward, (h, 2F) backward, 4 bytes each under delayed", () => {
    const lowPrecision = { recipe: 'delayed', dtype: 'bf16' } as const;
    // The router at the training dtype in both: they differ by the casts alone.
    const plain = moeCompute(x, h100, 'fp8', 2);
    const cast = moeCompute(x, h100, 'fp8', 2, 'burst', lowPrecision);
    const routerBf16 =
      termsUs(cast.forward, (t) => t.term === 'router') - termsUs(plain.forward, (t) => t.term === 'router');
    expect(routerBf16).toBeGreaterThan(0);
    const r = 8192; // T·k on one local expert (E/EP = 1)
    const notRouter = (t: { term: string }) => t.term !== 'router';
    expect(termsUs(cast.forward, notRouter) - termsUs(plain.forward, notRouter)).toBeCloseTo(
      memoryBoundUs(r * 4096 * 4, h100) + memoryBoundUs(r * 14336 * 4, h100),
      9,
    );
    expect(termsUs(cast.backward, notRouter) - termsUs(plain.backward, notRouter)).toBeCloseTo(
      memoryBoundUs(r * 4096 * 4, h100) + memoryBoundUs(r * 2 * 14336 * 4, h100),
      9,
    );
    const shared = moeCompute({ ...x, sharedFfn: 2048 }, h100, 'fp8', 2, 'burst', lowPrecision);
    expect(termsUs(shared.forward, (t) => t.term === 'shared-cast')).toBeCloseTo(
      memoryBoundUs(4096 * 4096 * 4, h100) + memoryBoundUs(4096 * 2048 * 4, h100),
      9,
    );
  });
});
