import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import type { CudaGraphModule } from '../../../../src/megatron/cuda-graph-rules.ts';
import { moeDefaults } from '../../../../src/megatron/moe.ts';
import type { TrainingSetup } from '../../../../src/megatron/training-setup.ts';
import { configFromPreset } from '../../../../src/parallel/config.ts';
import { makePlan } from '../../../../src/parallel/plan.ts';
import { capturedOps } from '../../../../src/projection/layer/cuda-graph-scope.ts';
import { defaultKernelOptions, type CudaGraphImpl } from '../../../../src/projection/layer/kernel-options.ts';
import { projectOps } from '../../../../src/projection/layer/projected-layer.ts';
import { kernelModel } from '../../../../src/hardware/kernel-time.ts';
import { hostDispatchModel } from '../../../../src/hardware/host-dispatch.ts';
import { projectStep } from '../../../../src/projection/step/cluster-projection.ts';
import { cudaGraphRefusalsOf } from '../../../../src/projection/step/chunk-times.ts';

// The small model of cuda-graph-memory.test.ts: s 2048, b 1, h 2048, t 2 with SP, 4 layers on 8 GPUs,
// global batch 8. Rows per rank S = s/t = 1024: a layer input [S, b, h] in bf16 is 4 MiB; the
// transformer_engine mask [b, 1, s, s] bool 2048² = 4 MiB.
const MiB = 2 ** 20;
const sizes = { s: 2048, b: 1, h: 2048, heads: 16, groups: 4, ffn: 5632, vocab: 32000 };
const p1: TrainingSetup = { sizes, tp: 2, sp: true, layers: 4, gpus: 8, globalBatch: 8, overlap: true }; // DP 4, m 2
const p2: TrainingSetup = { ...p1, pp: 2 }; // DP 2, m 4, 2 layers per stage
const on = (impl: CudaGraphImpl, scope: CudaGraphModule[] = []) => ({
  system: systems['dgx-h100'],
  dtype: 'bf16' as const,
  kernels: { ...defaultKernelOptions, cudaGraphImpl: impl, cudaGraphModules: scope },
});
const added = async (setup: TrainingSetup, scope: CudaGraphModule[]) => {
  const eager = (await projectStep(setup, on('none'))).stageMemory.map((s) => s.peakBytes);
  const step = await projectStep(setup, on('transformer_engine', scope));
  return {
    bytes: step.stageMemory.map((s, i) => s.peakBytes - eager[i]!),
    graphs: step.cudaGraphs?.map((g) => g.graphs),
  };
};

describe('a partial --cuda-graph-modules scope under transformer_engine (transformer_layer.py:1087-1193, core_v0.19.0)', () => {
  it('memory: every dense layer keeps its graph pair; the mask only with attn in the scope', async () => {
    // p = 1, one micro-batch captured: 4 sets. attn: 4·(4 + 4) + 4 = 36 MiB (the whole layer's);
    // mlp: its input is the attention output [S, b, h], no mask: 4·4 + 4 = 20 MiB. 2·4 graphs each.
    expect(await added(p1, ['attn'])).toEqual({ bytes: [36 * MiB], graphs: [8] });
    expect(await added(p1, ['mlp'])).toEqual({ bytes: [20 * MiB], graphs: [8] });
    expect(await added(p1, ['attn', 'mlp'])).toEqual(await added(p1, []));
    // p = 2, m = 4 captured, 2 layers per stage: stage 0 keeps 4 sets, stage 1 2.
    // attn: [4·8 + 4, 2·8 + 4] = [36, 20] MiB; mlp: [4·4 + 4, 2·4 + 4] = [20, 12] MiB; 2·2·4 = 16 graphs.
    expect(await added(p2, ['attn'])).toEqual({ bytes: [36 * MiB, 20 * MiB], graphs: [16, 16] });
    expect(await added(p2, ['mlp'])).toEqual({ bytes: [20 * MiB, 12 * MiB], graphs: [16, 16] });
  });

  it('the captured ops: _forward_attention (input norm through its residual add) and _forward_mlp (pre-MLP norm through the closing add), and their backwards', async () => {
    // The classroom plan at t 2 with SP (embedding 0, layer 2-22, head 23-31; backward 32-74).
    const plan = (await makePlan(configFromPreset('classroom', { tp: 2, sp: true }))).plan;
    const at = (scope: CudaGraphModule[]) => capturedOps(plan, scope).flatMap((c, i) => (c ? [i] : []));
    const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, k) => a + k);
    // attn: fwd 2 (rmsnorm g1) … 14 (add); bwd 50 (after g2's weight grad 49) … 72 (g1's weight grad).
    expect(at(['attn'])).toEqual([...range(2, 14), ...range(50, 72)]);
    // mlp: fwd 15 (rmsnorm g2) … 22 (add); bwd 37 (after wout's weight grad 36) … 49.
    expect(at(['mlp'])).toEqual([...range(15, 22), ...range(37, 49)]);
    expect(capturedOps(plan, []).every(Boolean)).toBe(true);
  });

  it('launch time: the captured kernels launch inside the graph with no host gap, the rest run eager', async () => {
    const plan = (await makePlan(configFromPreset('classroom', { tp: 2, sp: true }))).plan;
    const m = { system: systems['dgx-h100'], dtype: 'bf16' as const };
    const k = (impl: CudaGraphImpl, scope: CudaGraphModule[] = []) => ({
      ...m,
      kernels: {
        ...defaultKernelOptions,
        attentionBackend: 'unfused' as const,
        cudaGraphImpl: impl,
        cudaGraphModules: scope,
      },
    });
    const eager = projectOps(plan, k('none'));
    const whole = projectOps(plan, k('transformer_engine'));
    const attn = projectOps(plan, k('transformer_engine', ['attn']));
    const captured = capturedOps(plan, ['attn']);
    const device = (o: typeof eager, i: number) => o.computeMs[0]![i]! - o.hostGapMs[i]!;
    // Per captured kernel 0.9 − 0.5 = 0.4 µs less launch (host-dispatch.ts), no host gap.
    expect(kernelModel.launchUs - hostDispatchModel.graphLaunchUs).toBeCloseTo(0.4, 12);
    let gaps = 0;
    plan.ops.forEach((op, i) => {
      if (op.phase !== 'forward' && op.phase !== 'backward') return;
      if (captured[i]) {
        expect(attn.hostGapMs[i]).toBe(0);
        expect(device(attn, i)).toBeCloseTo(device(whole, i), 12);
      } else {
        expect(device(attn, i)).toBeCloseTo(device(eager, i), 12);
        gaps += attn.hostGapMs[i]!;
      }
    });
    // The eager ops (embedding, head) still wait on the host.
    expect(gaps).toBeGreaterThan(0);
    const sum = (o: typeof eager) => o.computeMs[0]!.reduce((a, x) => a + x, 0);
    expect(sum(whole)).toBeLessThan(sum(attn));
    expect(sum(attn)).toBeLessThan(sum(eager));
  });

  it('the step: a partial scope saves less than the whole layer, more than none', async () => {
    const step = async (impl: CudaGraphImpl, scope: CudaGraphModule[] = []) =>
      (await projectStep(p1, on(impl, scope))).stepMs;
    const [none, attn, mlp, whole] = await Promise.all([
      step('none'),
      step('transformer_engine', ['attn']),
      step('transformer_engine', ['mlp']),
      step('transformer_engine'),
    ]);
    expect(whole).toBeLessThan(attn);
    expect(whole).toBeLessThan(mlp);
    expect(attn).toBeLessThan(none);
    expect(mlp).toBeLessThan(none);
  });

  it('what stays refused as not priced: local, mixed dense and MoE layers, MLA layers, scopes other than attn and mlp (attn and moe where every layer is MoE)', () => {
    const te = on('transformer_engine', ['attn']).kernels;
    expect(cudaGraphRefusalsOf(p1, te)).toEqual([]);
    expect(cudaGraphRefusalsOf(p1, { ...te, cudaGraphModules: ['attn', 'mlp'] })).toEqual([]);
    expect(cudaGraphRefusalsOf(p1, { ...te, cudaGraphImpl: 'local' })[0]).toMatch(
      /--cuda-graph-modules attn: a partial capture scope is not priced yet with --cuda-graph-impl local/,
    );
    expect(cudaGraphRefusalsOf(p1, { ...te, cudaGraphModules: ['mamba'] })[0]).toMatch(/not priced yet for mamba/);
    const moe: TrainingSetup = {
      ...p1,
      tp: 1,
      sp: false,
      moe: { ...moeDefaults(8, 5632), ep: 8, dispatcher: 'alltoall', groupedGemm: true },
    };
    expect(cudaGraphRefusalsOf(moe, te)).toEqual([]);
    const mixed = { ...moe, moe: { ...moe.moe!, layerFreq: 2 } };
    expect(cudaGraphRefusalsOf(mixed, te)[0]).toMatch(/not priced yet in a model with dense and MoE layers/);
    expect(cudaGraphRefusalsOf(moe, { ...te, cudaGraphModules: ['moe_router'] })[0]).toMatch(
      /not priced yet for moe_router/,
    );
  });

  it('moe: refused without drop-and-pad (transformer_config.py:2505-2511); with a capacity factor and --moe-pad-expert-input-to-capacity, the pre-MLP norm and MoE layer graphed', async () => {
    const moeOf = (pad: boolean): TrainingSetup => ({
      ...p1,
      tp: 1,
      sp: false,
      moe: {
        ...moeDefaults(8, 5632),
        ep: 8,
        dispatcher: 'alltoall',
        groupedGemm: true,
        capacityFactor: 1,
        ...(pad && { padToCapacity: true }),
      },
    });
    const te = on('transformer_engine', ['moe']).kernels;
    expect(cudaGraphRefusalsOf(moeOf(false), te)).toEqual([
      'moe cuda graph is only supported with drop-padding MoE. (megatron/core/transformer/transformer_config.py:2505-2511)',
    ]);
    expect(cudaGraphRefusalsOf(moeOf(true), te)).toEqual([]);
    // With drop-and-pad Megatron does not check the preprocess's DtoH syncs (:2512-2519 sit in the else branch).
    expect(cudaGraphRefusalsOf(moeOf(true), { ...te, cudaGraphModules: ['moe_router', 'moe_preprocess'] })[0]).toMatch(
      /not priced yet for moe_router, moe_preprocess/,
    );
    // The captured ops: the same span as mlp in the plan a MoE layer replaces the MLP of.
    const plan = (await makePlan(configFromPreset('classroom', { tp: 2, sp: true }))).plan;
    expect(capturedOps(plan, ['moe'])).toEqual(capturedOps(plan, ['mlp']));
    // t 1, 4 layers, m 2 on DP 8: S = 2048 rows, an input [S, b, h] bf16 = 8 MiB; moe keeps no mask: 4·8 + 8 MiB.
    const eager = await projectStep(moeOf(true), on('none'));
    const graphed = await projectStep(moeOf(true), on('transformer_engine', ['moe']));
    expect(graphed.stageMemory[0]!.peakBytes - eager.stageMemory[0]!.peakBytes).toBe(40 * MiB);
    expect(graphed.stepMs).toBeLessThan(eager.stepMs);
  });
});
