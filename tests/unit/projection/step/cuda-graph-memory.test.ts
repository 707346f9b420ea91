import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import type { TrainingSetup } from '../../../../src/megatron/training-setup.ts';
import { defaultKernelOptions, type CudaGraphImpl } from '../../../../src/projection/layer/kernel-options.ts';
import { simulatePipeline } from '../../../../src/projection/pipeline/pipeline-schedule.ts';
import { assembleStep, projectStep, stepSummary } from '../../../../src/projection/step/cluster-projection.ts';
import {
  cudaGraphStage,
  layersInFlight,
  overlapLayersInFlight,
} from '../../../../src/projection/step/cuda-graph-memory.ts';
import { priceLayers } from '../../../../src/projection/step/layer-pricing.ts';
import { cudaGraphLine } from '../../../../scripts/project/cuda-graph-report.ts';
import { budgetLines } from '../../../../src/projection/step/cluster-summary.ts';
import { moeDefaults } from '../../../../src/megatron/moe.ts';

// One small model: s 2048, b 1, h 2048, t 2 with SP, 4 layers on 8 GPUs, global batch 8.
// Rows per rank S = s/t = 1024: a layer input [S, b, h] in bf16 is 1024·2048·2 = 4 MiB; the
// transformer_engine mask [b, 1, s, s] bool 2048² = 4 MiB.
const MiB = 2 ** 20;
const sizes = { s: 2048, b: 1, h: 2048, heads: 16, groups: 4, ffn: 5632, vocab: 32000 };
const p1: TrainingSetup = { sizes, tp: 2, sp: true, layers: 4, gpus: 8, globalBatch: 8, overlap: true }; // DP 4, m 2
const p2: TrainingSetup = { ...p1, pp: 2 }; // DP 2, m 4, 2 layers per stage
const on = (impl: CudaGraphImpl) => ({
  system: systems['dgx-h100'],
  dtype: 'bf16' as const,
  kernels: { ...defaultKernelOptions, cudaGraphImpl: impl },
});
const peaks = async (setup: TrainingSetup, impl: CudaGraphImpl) =>
  (await projectStep(setup, on(impl))).stageMemory.map((s) => s.peakBytes);
const added = async (setup: TrainingSetup, impl: CudaGraphImpl) => {
  const eager = await peaks(setup, 'none');
  return (await peaks(setup, impl)).map((b, i) => b - eager[i]!);
};

describe('the memory CUDA graphs take (cuda_graphs.py, TE graph.py, full_cuda_graph.py at core_v0.19.0)', () => {
  it('transformer_engine: per layer and micro-batch in flight a bf16 input and a mask, plus one output gradient', async () => {
    // p = 1: one micro-batch captured, 4 layers → 4 sets · (4 + 4) MiB + 4 MiB = 36 MiB; 2·4 graphs.
    expect(await added(p1, 'transformer_engine')).toEqual([36 * MiB]);
    // p = 2, m = 4, 2 layers per stage: stage 0 holds 2 micro-batches in flight → 4 sets, 36 MiB;
    // stage 1 one → 2 sets, 2·8 + 4 = 20 MiB; 2·2·4 = 16 graphs each.
    expect(await added(p2, 'transformer_engine')).toEqual([36 * MiB, 20 * MiB]);
    const step = await projectStep(p2, on('transformer_engine'));
    expect(step.cudaGraphs?.map((g) => [g.graphs, g.staticSets])).toEqual([
      [16, 4],
      [16, 2],
    ]);
    expect((await projectStep(p1, on('transformer_engine'))).cudaGraphs?.[0]?.graphs).toBe(8);
  });

  it('local: the first layer input copied into the pool, one [S, b, h] per micro-batch in flight', async () => {
    expect(await added(p1, 'local')).toEqual([4 * MiB]);
    expect(await added(p2, 'local')).toEqual([8 * MiB, 4 * MiB]);
    expect((await projectStep(p2, on('local'))).cudaGraphs?.map((g) => g.graphs)).toEqual([16, 16]);
  });

  it("full_iteration: the loader's m batches in static buffers, 28·b·s + b·s² bytes each, one graph", async () => {
    const batch = 28 * 2048 + 2048 * 2048; // 4,251,648
    expect(await added(p1, 'full_iteration')).toEqual([2 * batch]);
    expect(await added(p2, 'full_iteration')).toEqual([4 * batch, 4 * batch]);
    expect((await projectStep(p2, on('full_iteration'))).cudaGraphs?.map((g) => g.graphs)).toEqual([1, 1]);
  });

  it('counts the (layer, micro-batch) pairs in flight from the schedule: (p − i)·L under 1F1B', () => {
    expect([0, 1, 2, 3].map((i) => layersInFlight({ p: 4, v: 1, m: 8 }, i, [5]))).toEqual([20, 15, 10, 5]);
    expect(layersInFlight({ p: 4, v: 1, m: 2 }, 0, [5])).toBe(10);
    // Interleaved, one layer per chunk: the chunks in flight the simulation reports.
    const run = simulatePipeline({ p: 2, v: 2, m: 4, forwardMs: () => 1, backwardMs: () => 2, p2pMs: 0 });
    expect([0, 1].map((i) => layersInFlight({ p: 2, v: 2, m: 4 }, i, [1, 1]))).toEqual(run.inFlight);
    const empty = cudaGraphStage(
      'transformer_engine',
      { ...sizes, t: 1, sp: false, cp: 1, p: 2, v: 1, m: 4, dtypeBytes: 2 },
      0,
      [0],
    );
    expect([empty.graphs, empty.resident.length]).toEqual([0, 0]);
  });

  it("the advisor's memory filter sees them: stepSummary's peak is assembleStep's", async () => {
    const machine = on('transformer_engine');
    const pricing = await priceLayers(p2, machine, 'first');
    const full = assembleStep(p2, machine, pricing);
    expect(stepSummary(p2, machine, pricing)?.memoryBytes).toBe(full.memory.totalBytes);
    const gpu = { ...machine.system.gpu, memoryGiB: (full.memory.totalBytes - 1) / 2 ** 30 };
    expect(stepSummary(p2, { ...machine, system: { ...machine.system, gpu } }, pricing)).toBeUndefined();
  });

  it('the CLI line and the JSON rows name the graphs and buffers per stage', async () => {
    const step = await projectStep(p2, on('transformer_engine'));
    const [line] = budgetLines([{ tp: 2, ok: true, step }]);
    expect(line?.ok && line.cudaGraphs).toEqual([
      { graphs: 16, residentGiB: 36 / 1024, perMicroBatchGiB: 0 },
      { graphs: 16, residentGiB: 20 / 1024, perMicroBatchGiB: 0 },
    ]);
    const [local] = budgetLines([{ tp: 2, ok: true, step: await projectStep(p2, on('local')) }]);
    expect(local?.ok && local.cudaGraphs?.map((g) => g.perMicroBatchGiB)).toEqual([4 / 1024, 4 / 1024]);
    expect(cudaGraphLine(2, step.cudaGraphs!)).toBe(
      't 2: CUDA graphs (transformer_engine, in the memory/GPU column): stage 0: 16 graphs, 36.0 MiB static buffers (4 input sets); stage 1: 16 graphs, 20.0 MiB static buffers (2 input sets)',
    );
  });

  it('--overlap-moe-expert-parallel-comm: transformer_engine captures all m at p = 1, in the layer-wise order', async () => {
    // p = 1, L = 4: warmup F(mb 0) opens 4 layers, then (B0, F1) runs F1's layer 1 before B0's
    // layer 4: 5 in flight (cuda_graphs.py:2907-2925); m = 1 has no pair: 4.
    expect(overlapLayersInFlight({ p: 1, v: 1, m: 2 }, 0, [4])).toBe(5);
    expect(overlapLayersInFlight({ p: 1, v: 1, m: 1 }, 0, [4])).toBe(4);
    // 1F1B p = 4, L = 5: stage i warms up with p − i chunk forwards, (p − i)·5 + 1 at the first pair.
    expect([0, 1, 2, 3].map((i) => overlapLayersInFlight({ p: 4, v: 1, m: 8 }, i, [5]))).toEqual([21, 16, 11, 6]);
    // A MoE model at p = 1, t 1: S = 2048 rows, an input [2048, 1, 2048] bf16 8 MiB, the mask 2048² = 4 MiB;
    // 8 GPUs, EP 8, global batch 16: DP 8, m 2.
    const moe = (overlapEpComm: boolean): TrainingSetup => ({
      ...p1,
      tp: 1,
      sp: false,
      globalBatch: 16,
      moe: { ...moeDefaults(8, 5632), topk: 2, ep: 8, dispatcher: 'alltoall', groupedGemm: true, overlapEpComm },
    });
    const graphsOf = async (overlapEpComm: boolean) => {
      const g = (await projectStep(moe(overlapEpComm), on('transformer_engine'))).cudaGraphs![0]!;
      return [g.graphs, g.staticSets, g.resident.reduce((a, r) => a + r.bytes, 0) / MiB];
    };
    // Without: one micro-batch, 2·4 graphs, 4 sets · 12 + 8 = 56 MiB. With: 2·4·2 graphs, 5 · 12 + 8 = 68 MiB.
    expect(await graphsOf(false)).toEqual([8, 4, 56]);
    expect(await graphsOf(true)).toEqual([16, 5, 68]);
  });
});
