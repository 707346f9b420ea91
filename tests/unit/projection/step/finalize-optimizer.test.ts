import { describe, expect, it } from 'vitest';
import { kernelModel } from '../../../../src/hardware/kernel-time.ts';
import { systems } from '../../../../src/hardware/systems.ts';
import { seedsV100 } from '../../../../src/megatron/scenarios.ts';
import { configDefaults } from '../../../../src/parallel/config.ts';
import { makePlan } from '../../../../src/parallel/plan.ts';
import { isPerStep, tpGroupLink } from '../../../../src/projection/layer/projected-layer.ts';
import { finalizeTime } from '../../../../src/projection/step/finalize.ts';
import { projectStep } from '../../../../src/projection/step/cluster-projection.ts';
import { budgetLines } from '../../../../src/projection/step/cluster-summary.ts';
import { bytesPerElement } from '../../../../src/accounting/parameters.ts';
import type { LayerPlan } from '../../../../src/parallel/plan-types.ts';
import { optimizerMs } from '../../../../src/projection/step/optimizer.ts';

describe('finalizeTime: the finalize-phase collectives, coalesced over the layers', () => {
  const system = systems['v100-pcie-8'];
  const machine = { system, dtype: 'fp16' as const };
  const plansOf = async (sp: boolean) => {
    const c = { ...configDefaults, ...seedsV100.setup.sizes, tp: 2, sp };
    return { full: (await makePlan(c)).plan, block: (await makePlan({ ...c, vocab: 0 })).plan };
  };

  it("SP's norm-gradient all-reduce: one call of (1 + (L − 1)) layers' payload in main_grad's format (fp16: 2 bytes)", async () => {
    const { full, block } = await plansOf(true);
    const perStep = block.ops.filter((op) => isPerStep(op) && op.kind === 'collective');
    expect(perStep.map((op) => op.kind === 'collective' && [op.collective.op, op.collective.payloadBytes])).toEqual([
      ['allReduce', 4096],
    ]);
    // 4096 plan bytes are 1024 fp32 values; fp16 on the wire: 2048 bytes per layer, L = 4 → 8192 bytes.
    const link = tpGroupLink(system, 2);
    const S = 2048 * 4;
    const expected = (system.collectiveBaseUs + 2 * (link.alphaUs + S / 2 / (link.busGBps * 1e3))) / 1e3;
    expect(finalizeTime(full, block, 4, machine, 2)).toBeCloseTo(expected, 12);
    // One layer: the full plan's call alone, 2048 bytes.
    const one = (system.collectiveBaseUs + 2 * (link.alphaUs + 2048 / 2 / (link.busGBps * 1e3))) / 1e3;
    expect(finalizeTime(full, block, 1, machine, 2)).toBeCloseTo(one, 12);
  });

  it('bf16 all-reduces the fp32 main_grad (finalize_model_grads.py:455-465, arguments.py:1181-1193): 4 bytes per element', async () => {
    const h100 = systems['dgx-h100'];
    const setup = { ...seedsV100.setup, tp: 2, sp: true, layers: 10 };
    const step = await projectStep(setup, { system: h100, dtype: 'bf16' });
    const c = { ...configDefaults, ...seedsV100.setup.sizes, tp: 2, sp: true };
    const payload = (plan: LayerPlan): number =>
      plan.ops.reduce((a, op) => a + (isPerStep(op) && op.kind === 'collective' ? op.collective.payloadBytes : 0), 0);
    // Elements: the 10 layers' input and pre-MLP norms, 2h each (the full plan as one layer + 9 blocks).
    const elements =
      (payload((await makePlan(c)).plan) + 9 * payload((await makePlan({ ...c, vocab: 0 })).plan)) / bytesPerElement;
    expect(elements).toBe(10 * 2 * 512);
    const link = tpGroupLink(h100, 2);
    const S = elements * 4;
    expect(step.finalizeMs).toBeCloseTo(
      (h100.collectiveBaseUs + 2 * (link.alphaUs + S / 2 / (link.busGBps * 1e3))) / 1e3,
      12,
    );
    // npm run project --json carries it (cluster-summary.ts budgetLines).
    expect(budgetLines([{ tp: 2, ok: true, step }])[0]).toMatchObject({
      finalizeMs: step.finalizeMs,
      embeddingAllReduceMs: step.embeddingAllReduceMs,
    });
  });

  it('without SP no collective waits for the step: 0', async () => {
    const { full, block } = await plansOf(false);
    expect(finalizeTime(full, block, 4, machine, 2)).toBe(0);
  });
});

describe('optimizerMs: Adam over the busiest stage, memory-bound', () => {
  const gpu = systems['dgx-h100'].gpu;
  /** bf16: weights 2, gradients 4, main weights and moments 12 bytes per parameter. */
  const ms = (params: number): number =>
    (((params * (2 * (12 + 2) + 4)) / (kernelModel.hbmEfficiency * gpu.hbmGBps * 1e9)) * 1e6 + kernelModel.launchUs) /
    1e3;

  it("reads and writes the weights and Adam's state, reads the gradients: P·(2·(o + w) + g) bytes", () => {
    expect(optimizerMs([10e6, 30e6, 20e6], false, 4, 'bf16', gpu)).toBeCloseTo(ms(30e6), 12);
  });
  it("the distributed optimizer updates this GPU's 1/d shard", () => {
    expect(optimizerMs([10e6, 30e6, 20e6], true, 4, 'bf16', gpu)).toBeCloseTo(ms(30e6 / 4), 12);
  });
  it('quantized parameters keep no 16-bit copy (distrib_optimizer.py:2868-2874): Q·2·w fewer bytes, the largest stage after', () => {
    const hbm = (bytes: number): number => (bytes / (kernelModel.hbmEfficiency * gpu.hbmGBps * 1e9)) * 1e3;
    // Stage 1: 30M·32 − 24M·4 = 864 MB; stage 2: 28M·32 = 896 MB, now the largest.
    expect(optimizerMs([10e6, 30e6, 28e6], false, 4, 'bf16', gpu, [8e6, 24e6, 0])).toBeCloseTo(ms(28e6), 12);
    expect(optimizerMs([10e6, 30e6, 20e6], true, 4, 'bf16', gpu, [8e6, 24e6, 16e6])).toBeCloseTo(
      ms(30e6 / 4) - hbm((24e6 / 4) * 2 * 2),
      12,
    );
  });
});
