import { describe, expect, it } from 'vitest';
import { collectiveTimeUs } from '../../../../src/hardware/interconnect.ts';
import { systems } from '../../../../src/hardware/systems.ts';
import type { FsdpSetup } from '../../../../src/megatron/fsdp.ts';
import { moeDefaults } from '../../../../src/megatron/moe.ts';
import { layoutFlags } from '../../../../src/megatron/parallel-layout.ts';
import type { TrainingSetup } from '../../../../src/megatron/training-setup.ts';
import { fsdpLayerTimes } from '../../../../src/projection/links/fsdp.ts';
import { groupLinks } from '../../../../src/projection/links/group-links.ts';
import { advise } from '../../../../src/projection/studies/advisor.ts';
import { defaultSearchSpace } from '../../../../src/projection/studies/advisor-space.ts';
import { projectStep } from '../../../../src/projection/step/cluster-projection.ts';

const system = systems['dgx-h100'];
const h100 = { system, dtype: 'bf16' as const };
// A 2-node job, t 8 in the node: DP 2 over the NIC rail.
const base: TrainingSetup = {
  sizes: { s: 2048, b: 1, h: 4096, heads: 32, groups: 8, ffn: 14336, vocab: 32000 },
  tp: 8,
  sp: true,
  layers: 8,
  gpus: 16,
  globalBatch: 8,
  overlap: true,
  flashAttention: true,
};
const zero3: FsdpSetup = { impl: 'megatron', strategy: 'optim_grads_params' };
const with_ = (fsdp: FsdpSetup, more: Partial<TrainingSetup> = {}): TrainingSetup => ({ ...base, fsdp, ...more });

describe('FSDP unit by unit (links/fsdp.ts fsdpLayerTimes)', () => {
  const link = groupLinks(system, { tp: 8, pp: 1, vpp: 1, cp: 1, dp: 2 }).dpCp;
  const P = 50e6;
  const ag = (system.collectiveBaseUs + collectiveTimeUs('allGather', 2 * P, 2, link)) / 1e3;
  const rs = (system.collectiveBaseUs + collectiveTimeUs('reduceScatter', 2 * P, 2, link)) / 1e3;

  it('ZeRO-3: a bf16 all-gather per forward, all-gather + reduce-scatter per backward; hidden under long compute', () => {
    const long = fsdpLayerTimes(zero3, 'bf16', P, 2, link, system, system.gpu, 1e3, 1e3);
    expect(long.gatherMs).toBeCloseTo(ag, 12);
    expect(long.reduceScatterMs).toBeCloseTo(rs, 12);
    expect(long.layerExposedMs).toBe(0);
    // The first unit of a chunk pass waits for its own collectives.
    expect(long.chunkForwardMs).toBeCloseTo(ag, 12);
    expect(long.chunkBackwardMs).toBeCloseTo(ag + rs, 12);
    // No compute: each layer waits for all of it.
    const none = fsdpLayerTimes(zero3, 'bf16', P, 2, link, system, system.gpu, 0, 0);
    expect(none.layerExposedMs).toBeCloseTo(ag + ag + rs, 12);
    expect(none.layerForwardMs + none.layerBackwardMs).toBeCloseTo(2 * ag + rs, 12);
  });

  it('ZeRO-2 reduce-scatters only; ZeRO-1, ZeRO-0 and DP 1 add nothing per layer', () => {
    const z2 = fsdpLayerTimes(
      { impl: 'megatron', strategy: 'optim_grads' },
      'bf16',
      P,
      2,
      link,
      system,
      system.gpu,
      0,
      0,
    );
    expect([z2.gatherMs, z2.layerExposedMs]).toEqual([0, z2.reduceScatterMs]);
    for (const strategy of ['optim', 'no_shard'] as const)
      expect(
        fsdpLayerTimes({ impl: 'megatron', strategy }, 'bf16', P, 2, link, system, system.gpu, 0, 0).layerExposedMs,
      ).toBe(0);
    expect(fsdpLayerTimes(zero3, 'bf16', P, 1, link, system, system.gpu, 0, 0).layerExposedMs).toBe(0);
  });

  it('FSDP2 without reshard_after_forward gathers once: no all-gather in backward', () => {
    const f = fsdpLayerTimes(
      { impl: 'torch', reshardAfterForward: false },
      'bf16',
      P,
      2,
      link,
      system,
      system.gpu,
      0,
      0,
    );
    expect(f.layerBackwardMs).toBeCloseTo(rs, 12);
  });
});

describe('an FSDP step', () => {
  it('ZeRO-3 keeps 1/d of the weights, gradients (bf16) and fp32 main weights and moments', async () => {
    const p = await projectStep(with_(zero3), h100);
    const P = p.stageParams[0]!;
    expect(p.memory.weightBytes).toBeCloseTo((P * 2) / 2, 3);
    expect(p.memory.gradBytes).toBeCloseTo((P * 2) / 2, 3);
    expect(p.memory.optimizerBytes).toBeCloseTo((P * 12) / 2, 3);
    // Its unsharded units are resident: two layers' weights.
    const labels = p.stageMemory[0]!.intervals.map((x) => x.label);
    expect(labels).toContain('FSDP gathered layer weights');
    const ddp = await projectStep({ ...base, distributedOptimizer: true }, h100);
    expect(p.memory.totalBytes).toBeLessThan(ddp.memory.totalBytes);
  });

  it('ZeRO-3 reduce-scatters every micro-batch: its exposed collectives grow with m, the DDP tail does not', async () => {
    const one = await projectStep(with_(zero3), h100);
    const four = await projectStep(with_(zero3, { globalBatch: 32 }), h100);
    expect(one.fsdp!.exposedMs).toBeGreaterThan(0);
    expect(four.fsdp!.exposedMs).toBeCloseTo(4 * one.fsdp!.exposedMs, 9);
    expect(four.exposedByGroup.dp).toBeGreaterThanOrEqual(four.fsdp!.exposedMs);
  });

  it('Megatron-FSDP turns its overlaps on itself (megatron_fsdp.py:328-333): the flags change nothing', async () => {
    const off = await projectStep(with_(zero3), h100);
    const on = await projectStep(with_(zero3, { overlapGradReduce: true, overlapParamGather: true }), h100);
    expect(on.stepMs).toBe(off.stepMs);
    const z2 = { impl: 'megatron', strategy: 'optim_grads' } as const;
    const z2on = await projectStep(with_(z2, { overlapGradReduce: true }), h100);
    expect((await projectStep(with_(z2), h100)).stepMs).toBe(z2on.stepMs);
  });

  it('FSDP2 refuses what Megatron refuses: p > 1, fp16', async () => {
    await expect(projectStep(with_({ impl: 'torch', reshardAfterForward: true }, { pp: 2 }), h100)).rejects.toThrow(
      /arguments.py:1000-1001/,
    );
    await expect(
      projectStep(with_({ impl: 'torch', reshardAfterForward: true }), { ...h100, dtype: 'fp16' }),
    ).rejects.toThrow(/arguments.py:1012-1013/);
  });
});

describe('the advisor searches FSDP', () => {
  it('tries Megatron-FSDP and FSDP2, refuses FSDP2 with p > 1, and writes the launch flags', async () => {
    const space = {
      ...defaultSearchSpace(system, 8),
      vpp: [1],
      cp: [1],
      microBatch: [1],
      recompute: ['none'] as const,
    };
    const r = await advise(
      {
        model: { sizes: { s: 2048, h: 4096, heads: 32, groups: 8, ffn: 14336, vocab: 32000 }, layers: 8 },
        machine: h100,
        gpus: 16,
        globalBatch: 16,
      },
      space,
      { k: 500 },
    );
    expect(r.rejected.fsdp).toBeGreaterThan(0);
    const kinds = new Set(r.top.map((row) => row.layout.fsdp?.impl ?? 'none'));
    expect([...kinds].sort()).toEqual(['megatron', 'none', 'torch']);
    const row = r.top.find((x) => x.layout.fsdp?.impl === 'megatron')!;
    expect(row.layout.distributedOptimizer).toBe(true);
    // ZeRO-3 rows carry the overlaps Megatron-FSDP forces on; no row repeats one with them off.
    for (const x of r.top.filter(
      (y) => y.layout.fsdp?.impl === 'megatron' && y.layout.fsdp.strategy === 'optim_grads_params',
    ))
      expect([x.layout.overlapGradReduce, x.layout.overlapParamGather]).toEqual([true, true]);
    expect(layoutFlags(row.layout)).toContain('--use-megatron-fsdp');
  });
});

describe('Megatron-FSDP with MoE layers (mcore_fsdp_adapter.py:400-440: experts sharded over expert-DP)', () => {
  // 16 H100, t 1, EP 4: EDP = 16 / 4 = 4; dense parameters shard over DP 16.
  const moeSetup: TrainingSetup = {
    ...base,
    tp: 1,
    sp: false,
    layers: 4,
    gpus: 16,
    globalBatch: 16,
    moe: { ...moeDefaults(8, 1024), topk: 2, ep: 4, etp: 1, dispatcher: 'alltoall', groupedGemm: true },
  };
  const interval = (p: Awaited<ReturnType<typeof projectStep>>, label: string): number =>
    p.stageMemory[0]!.intervals.find((x) => x.label === label)!.bytes;

  it('ZeRO-3 keeps 1/EDP of each expert weight, gradient and optimizer state; the experts gather on the EDP link', async () => {
    const p = await projectStep({ ...moeSetup, fsdp: zero3 }, h100);
    // Per layer and rank: E/EP = 2 experts of SwiGLU (3·h·F) = 2·3·4096·1024; 4 MoE layers.
    const experts = 4 * 2 * 3 * 4096 * 1024;
    expect(p.moe!.stageExpertParams[0]).toBe(experts);
    expect(interval(p, 'expert weights')).toBeCloseTo((experts * 2) / 4, 0);
    expect(interval(p, 'expert main weights and Adam moments (1/4 shard)')).toBeCloseTo((experts * 12) / 4, 0);
    expect(interval(p, 'expert gradient buffer')).toBeCloseTo((experts * 2) / 4, 0);
    // The expert gradients are reduce-scattered unit by unit, so the step's expert tail has no sync left.
    const noShard = await projectStep({ ...moeSetup, fsdp: { impl: 'megatron', strategy: 'no_shard' } }, h100);
    expect(interval(noShard, 'expert main weights and Adam moments')).toBeCloseTo(experts * 12, 0);
    expect(p.memory.totalBytes).toBeLessThan(noShard.memory.totalBytes);
  });

  it('FSDP2 with EP > 1 is refused with Megatron’s line', async () => {
    await expect(
      projectStep({ ...moeSetup, fsdp: { impl: 'torch', reshardAfterForward: true } }, h100),
    ).rejects.toThrow(/expert parallelism/);
  });
});
