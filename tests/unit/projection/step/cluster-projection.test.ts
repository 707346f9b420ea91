import { describe, expect, it } from 'vitest';
import { peakFlops } from '../../../../src/hardware/gpus.ts';
import { seedsV100 } from '../../../../src/megatron/scenarios.ts';
import { systems } from '../../../../src/hardware/systems.ts';
import { stateBytesPerParam } from '../../../../src/accounting/training-memory.ts';
import type { TrainingSetup } from '../../../../src/megatron/training-setup.ts';
import { fixedBudget, projectStep } from '../../../../src/projection/step/cluster-projection.ts';
import { projectLayer } from '../../../../src/projection/layer/projected-layer.ts';
import { makePlan } from '../../../../src/parallel/plan.ts';
import { configFromPreset } from '../../../../src/parallel/config.ts';

const box = { system: systems['v100-pcie-8'], dtype: 'fp16' as const };
const setup = (tp: number, over: Partial<TrainingSetup> = {}): TrainingSetup => ({ ...seedsV100.setup, tp, ...over });

describe('projectStep', () => {
  it('adds up: tokens/s, TFLOP/s per GPU and MFU follow from the step time', async () => {
    const r = await projectStep(setup(2), box);
    expect(r.dp).toBe(4);
    expect(r.microBatches).toBe(2); // 64 / (8 · 4)
    expect(r.tokensPerStep).toBe(64 * 512);
    expect(r.tokensPerS).toBeCloseTo(r.tokensPerStep / (r.stepMs / 1e3), 6);
    expect(r.stepMs).toBeCloseTo(2 * r.microBatchMs + r.dpAllReduceMs + r.finalizeMs + r.optimizerMs, 9);
    expect(r.mfu).toBeCloseTo(r.modelFlopsPerStep / (8 * peakFlops(box.system.gpu, 'fp16') * r.stepMs * 1e-3), 9);
    expect(r.exposedMs).toBeLessThanOrEqual(r.stepMs);
  });

  it('counts L blocks and one embedding, output and loss', async () => {
    const one = await projectStep(setup(2, { layers: 1 }), box);
    const ten = await projectStep(setup(2, { layers: 10 }), box);
    expect(ten.microBatchMs - one.microBatchMs).toBeCloseTo(9 * one.block.stepMs, 6);
    expect(one.microBatchMs).toBe(one.full.stepMs);
  });

  it('runs the data-parallel all-reduce only when DP > 1: one bucket after backward, 40M-parameter buckets with --overlap-grad-reduce', async () => {
    const t8 = await projectStep(setup(8), box);
    expect(t8.dp).toBe(1);
    expect(t8.dpAllReduceMs).toBe(0);
    const t1 = await projectStep(setup(1), box);
    expect(t1.dpBuckets).toBe(1);
    // 2 bytes of fp16 gradient per parameter on the 7.6 GB/s ring: at least 2·7/8·S/B.
    expect(t1.dpAllReduceMs).toBeGreaterThan(((2 * 7) / 8) * ((t1.memory.params * 2) / 7.6e9) * 1e3);
    const over = await projectStep(setup(1, { overlapGradReduce: true }), box);
    expect(over.dpBuckets).toBe(Math.ceil(over.memory.params / 40e6));
    expect(over.dpAllReduceMs).toBeLessThan(t1.dpAllReduceMs);
  });

  it('counts Megatron’s bytes per parameter and shards them with t', async () => {
    expect(stateBytesPerParam.fp16.weights + stateBytesPerParam.fp16.grads + stateBytesPerParam.fp16.optimizer).toBe(
      20,
    );
    expect(stateBytesPerParam.bf16.weights + stateBytesPerParam.bf16.grads + stateBytesPerParam.bf16.optimizer).toBe(
      18,
    );
    expect(stateBytesPerParam.fp32.weights + stateBytesPerParam.fp32.grads + stateBytesPerParam.fp32.optimizer).toBe(
      16,
    );
    const t1 = await projectStep(setup(1), box);
    const t8 = await projectStep(setup(8), box);
    expect(t1.memory.weightBytes + t1.memory.gradBytes + t1.memory.optimizerBytes).toBe(20 * t1.memory.params);
    // Everything but the replicated norm weights is split: within 1% of params/8.
    expect(t8.memory.params / (t1.memory.params / 8)).toBeGreaterThan(1);
    expect(t8.memory.params / (t1.memory.params / 8)).toBeLessThan(1.01);
  });

  it('lets SP shrink activations and flags a model that does not fit', async () => {
    const noSp = await projectStep(setup(4), box);
    const sp = await projectStep(setup(4, { sp: true }), box);
    expect(sp.memory.activationBytes).toBeLessThan(noSp.memory.activationBytes);
    expect(noSp.memory.oom).toBe(false);
    const big = await projectStep(
      setup(1, {
        sizes: { s: 2048, b: 1, h: 4096, heads: 32, groups: 32, ffn: 11008, vocab: 32000 },
        layers: 32,
        globalBatch: 8,
      }),
      box,
    );
    expect(big.memory.oom).toBe(true); // 7B at 20 B/param = 134 GB > 32 GiB
    expect(big.memory.totalBytes).toBeGreaterThan(big.memory.capacityBytes);
  });

  it('makes recomputation cost time and save activation memory', async () => {
    const plain = await projectStep(setup(2), box);
    const redo = await projectStep(setup(2, { recompute: true }), box);
    expect(redo.stepMs).toBeGreaterThan(plain.stepMs);
    expect(redo.memory.activationBytes).toBeLessThan(plain.memory.activationBytes);
  });

  it('names an illegal setup', async () => {
    await expect(projectStep(setup(3), box)).rejects.toThrow(/multiple of t \(3\)|heads/);
    await expect(projectStep(setup(2, { globalBatch: 12 }), box)).rejects.toThrow(
      /global batch \(12 sequences\) must be a multiple of b·DP = 8·4 = 32/,
    );
    await expect(projectStep(setup(1), { system: box.system, dtype: 'bf16' })).rejects.toThrow(/no bf16 tensor cores/);
  });
});

describe('fixedBudget', () => {
  it('keeps t × DP = N and reports an illegal t with its reason', async () => {
    const rows = await fixedBudget(seedsV100.setup, [1, 2, 3, 4, 8], box);
    expect(rows.map((r) => r.tp)).toEqual([1, 2, 3, 4, 8]);
    for (const r of rows) if (r.ok) expect(r.step.dp * r.tp).toBe(8);
    const bad = rows.find((r) => r.tp === 3);
    expect(bad?.ok).toBe(false);
    if (bad && !bad.ok) expect(bad.reason).toMatch(/3/);
  });
});

describe('projectLayer', () => {
  it('follows the plan: SP exchanges all-reduces for reduce-scatter + all-gather of the same volume', async () => {
    const c = { ...configFromPreset('gpt2-layer'), heads: 8, groups: 8, s: 512, tp: 4 };
    const plain = projectLayer((await makePlan(c)).plan, box, true);
    const sp = projectLayer((await makePlan({ ...c, sp: true })).plan, box, true);
    const comm = (t: typeof plain): number => t.events.filter((e) => e.rank === 0 && e.stream === 'comm').length;
    expect(comm(sp)).toBeGreaterThan(comm(plain));
    expect(plain.stepMs).toBeGreaterThan(0);
  });
});
