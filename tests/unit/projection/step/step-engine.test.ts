import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import { seedsV100 } from '../../../../src/megatron/scenarios.ts';
import type { TrainingSetup } from '../../../../src/megatron/training-setup.ts';
import { makePlan } from '../../../../src/parallel/plan.ts';
import { configDefaults } from '../../../../src/parallel/config.ts';
import { projectStep } from '../../../../src/projection/step/cluster-projection.ts';
import { projectLayer } from '../../../../src/projection/layer/projected-layer.ts';
import { stagePieces } from '../../../../src/projection/layer/stage-pieces.ts';
import { bucketSyncUs } from '../../../../src/projection/links/data-parallel.ts';
import { groupLinks } from '../../../../src/projection/links/group-links.ts';

const box = { system: systems['v100-pcie-8'], dtype: 'fp16' as const };
const h100 = { system: systems['dgx-h100'], dtype: 'bf16' as const };
const setup = (over: Partial<TrainingSetup> = {}): TrainingSetup => ({ ...seedsV100.setup, tp: 2, ...over });
const { s, b, h, heads, vocab } = seedsV100.setup.sizes;
const L = seedsV100.setup.layers;

describe('stage pieces', () => {
  it('split the full plan into embedding, layer and output passes that add up to it', async () => {
    const c = { ...configDefaults, ...seedsV100.setup.sizes, tp: 2, sp: true };
    const full = (await makePlan(c)).plan;
    const block = (await makePlan({ ...c, vocab: 0 })).plan;
    const fullT = projectLayer(full, box, true);
    const p = stagePieces(full, fullT, block, projectLayer(block, box, true));
    const parts = [p.embedding, p.layer, p.output].flatMap((x) => [x.forward.ms, x.backward.ms]);
    for (const x of parts) expect(x).toBeGreaterThanOrEqual(0);
    expect(parts.reduce((a, x) => a + x, 0)).toBeCloseTo(fullT.stepMs, 9);
    // The output layer over 50304/2 vocabulary rows outweighs the embedding lookup.
    expect(p.output.forward.ms).toBeGreaterThan(p.embedding.forward.ms);
  });
});

describe('projectStep with pipeline parallelism', () => {
  it('places embedding and output on the end stages and sends p2p on the stage boundary', async () => {
    const r = await projectStep(setup({ layers: 8, pp: 2, gpus: 8, globalBatch: 64 }), box);
    expect(r.degrees).toEqual({ tp: 2, pp: 2, vpp: 1, cp: 1, dp: 2 });
    expect(r.split.layers).toEqual([[4], [4]]);
    expect(r.pipeline.p2pSends).toBe(2 * r.microBatches);
    expect(r.exposedByGroup.pp).toBeGreaterThan(0);
    expect(r.stageParams[0]).toBeCloseTo(r.stageParams[1]!, -3); // embedding ≈ output, both [V/t, h]
    expect(r.stepMs).toBeGreaterThanOrEqual(r.pipeline.spanMs);
  });

  it('interleaves v chunks and shrinks the bubble', async () => {
    const one = await projectStep(setup({ layers: 8, pp: 4, gpus: 8, globalBatch: 32 }), box);
    const two = await projectStep(setup({ layers: 8, pp: 4, vpp: 2, gpus: 8, globalBatch: 32 }), box);
    expect(two.split.layers).toEqual([
      [1, 1],
      [1, 1],
      [1, 1],
      [1, 1],
    ]);
    expect(two.pipeline.p2pSends).toBe(2 * 4 * (4 * 2 - 1));
    expect(two.pipeline.bubbleRatio).toBeLessThan(one.pipeline.bubbleRatio);
  });

  it('names an illegal pipeline', async () => {
    await expect(projectStep(setup({ pp: 4, gpus: 8 }), box)).rejects.toThrow(
      /layers \(10\) must divide evenly over p = 4/,
    );
    await expect(projectStep(setup({ layers: 8, pp: 4, vpp: 2, gpus: 8, globalBatch: 16 }), box)).rejects.toThrow(
      /multiple of p \(4\)/,
    );
    await expect(projectStep(setup({ pp: 3 }), box)).rejects.toThrow(/multiple of t·p·cp = 2·3·1 = 6/);
  });

  it("refuses the layouts Megatron refuses, with Megatron's reason", async () => {
    const pipe = { layers: 8, gpus: 8, tp: 1, globalBatch: 64 };
    // transformer_config.py: an end stage of 0 layers, or middle stages with no layers left.
    await expect(projectStep(setup({ ...pipe, pp: 4, firstStageLayers: 0 }), box)).rejects.toThrow(
      /num_layers_in_first_pipeline_stage must be larger than 0/,
    );
    await expect(projectStep(setup({ ...pipe, pp: 4, lastStageLayers: 0 }), box)).rejects.toThrow(
      /num_layers_in_last_pipeline_stage must be larger than 0/,
    );
    await expect(projectStep(setup({ ...pipe, pp: 4, firstStageLayers: 4, lastStageLayers: 4 }), box)).rejects.toThrow(
      /Mismatch: 0 middle layers remaining but 2 middle PP stages/,
    );
    // arguments.py:972-975: interleaved without p2p overlap needs p > 2; p = 4 is accepted.
    await expect(projectStep(setup({ ...pipe, pp: 2, vpp: 2, overlapP2pComm: false }), box)).rejects.toThrow(
      /needs p > 2: Megatron asserts it/,
    );
    const four = await projectStep(setup({ ...pipe, pp: 4, vpp: 2, overlapP2pComm: false }), box);
    expect(four.stepMs).toBeGreaterThan(0);
  });
});

describe("the last stage's loss and output in memory", () => {
  it('holds the 16-bit logits gradient (2·s·b·V/t) in the output backward and keeps the final norm input', async () => {
    const r = await projectStep(setup({ layers: 8, pp: 2, tp: 2, sp: true, gpus: 8, globalBatch: 64 }), box);
    const last = r.stageMemory[1]!;
    const grad = last.intervals.filter((x) => x.label.startsWith('backward transient'));
    // No recompute: the only backward transient is the logits gradient, one per micro-batch, fp16.
    expect(grad).toHaveLength(r.microBatches);
    expect(grad[0]!.bytes).toBe(2 * s * b * (vocab / 2));
    // The first stage has no output: no backward transient.
    expect(r.stageMemory[0]!.intervals.some((x) => x.label.startsWith('backward transient'))).toBe(false);
    // Kept per micro-batch on the last stage beyond its layers: the final norm's input and rstd
    // [s/t, b, h] + [s/t, b] and the output layer's input [s/t, b, h] in fp16, the loss's max,
    // Σ exp and targets [s, b] (priced at fp16 as the activation table does).
    const kept = (i: number) =>
      last.intervals.find((x) => x.label === `activations (micro-batch ${i}, chunk 0)`)!.bytes;
    const first = r.stageMemory[0]!.intervals.find((x) => x.label === 'activations (micro-batch 0, chunk 0)')!.bytes;
    const sl = s / 2;
    const outputKept = 2 * (2 * sl * b * h + sl * b) + 2 * 3 * s * b;
    const embeddingKept = 2 * s * b;
    expect(kept(0) - outputKept).toBe(first - embeddingKept);
  });
});

describe('recomputation, flash attention and the two MFUs', () => {
  it('counts full recompute’s extra forward in executed FLOPs only', async () => {
    const plain = await projectStep(setup(), box);
    const redo = await projectStep(setup({ recompute: true }), box);
    expect(plain.executedFlopsPerStep).toBe(plain.modelFlopsPerStep);
    expect(redo.modelFlopsPerStep).toBe(plain.modelFlopsPerStep);
    // One more forward of every layer: 2·(s·b)·(4h² + 3h·ffn) GEMMs + 4·b·s²·h attention, per sequence group.
    const ffn = seedsV100.setup.sizes.ffn;
    const layerFwd = 2 * s * b * (4 * h * h + 3 * h * ffn) + 4 * b * s * s * h;
    const replicasTimesM = seedsV100.setup.globalBatch / b;
    expect(redo.executedFlopsPerStep - redo.modelFlopsPerStep).toBeCloseTo(replicasTimesM * L * layerFwd, -3);
    expect(redo.executedMfu).toBeGreaterThan(redo.mfu);
  });

  it('makes selective recompute drop the s² probabilities and re-run only core attention', async () => {
    const plain = await projectStep(setup(), box);
    const sel = await projectStep(setup({ recomputation: { granularity: 'selective' } }), box);
    const full = await projectStep(setup({ recompute: true }), box);
    // Core attention forward GEMMs: QKᵀ and P·V, 2·b·s²·h each.
    expect(sel.executedFlopsPerStep - sel.modelFlopsPerStep).toBeCloseTo((64 / b) * L * 4 * b * s * s * h, -3);
    expect(sel.memory.totalBytes).toBeLessThan(plain.memory.totalBytes);
    expect(sel.stepMs).toBeGreaterThan(plain.stepMs);
    expect(sel.stepMs).toBeLessThan(full.stepMs);
  });

  it('never stores the s² probabilities with flash attention: L·(2·b·nq·s² − 4·b·nq·s) bytes fewer at the peak', async () => {
    const plain = await projectStep(setup(), box);
    const flash = await projectStep(setup({ flashAttention: true }), box);
    const nq = heads / 2;
    expect(plain.memory.totalBytes - flash.memory.totalBytes).toBe(L * (2 * b * nq * s * s - 4 * b * nq * s));
  });
});

describe('data parallelism, tied embeddings and context parallelism', () => {
  it('shards the optimizer state over DP with the distributed optimizer and all-gathers parameters', async () => {
    const plain = await projectStep(setup({ tp: 1 }), box);
    const dist = await projectStep(setup({ tp: 1, distributedOptimizer: true }), box);
    expect(dist.memory.optimizerBytes).toBeCloseTo(plain.memory.optimizerBytes / 8, 3);
    expect(dist.paramGatherMs).toBeGreaterThan(0);
    // Megatron refuses --overlap-param-gather without --overlap-grad-reduce (arguments.py:994-995).
    await expect(
      projectStep(setup({ tp: 1, distributedOptimizer: true, overlapParamGather: true }), box),
    ).rejects.toThrow(/needs --overlap-grad-reduce.*arguments\.py:994-995/);
    // 40M-parameter buckets: only the first waits, the rest hides under the first forward.
    const buckets = { tp: 1, distributedOptimizer: true, overlapGradReduce: true };
    const hidden = await projectStep(setup({ ...buckets, overlapParamGather: true }), box);
    expect(hidden.dpBuckets).toBe(Math.ceil(hidden.memory.params / 40e6));
    // The default bucket is max(40M, 1M · DP · cp) (training.py resolve_ddp_bucket_size, dp_cp group):
    // DP 32 × cp 2 = 64 → 64M parameters, where DP alone would give 40M.
    const big = { s: 4096, b: 1, h: 4096, heads: 32, groups: 8, ffn: 14336, vocab: 128256 };
    const cpRun = await projectStep(
      { sizes: big, sp: true, layers: 4, cp: 2, gpus: 512, globalBatch: 32, overlap: true, ...buckets, tp: 8 },
      h100,
    );
    expect(cpRun.dp).toBe(32);
    expect(Math.ceil(cpRun.memory.params / 64e6)).not.toBe(Math.ceil(cpRun.memory.params / 40e6));
    expect(cpRun.dpBuckets).toBe(Math.ceil(cpRun.memory.params / 64e6));
    expect(hidden.paramGatherMs).toBeLessThan(dist.paramGatherMs);
    await expect(projectStep(setup({ overlapParamGather: true }), box)).rejects.toThrow(
      /needs --use-distributed-optimizer/,
    );
  });

  it('with 1F1B and p > 1 waits for each stage’s parameters at its first forward, the waits adding down the pipeline', async () => {
    // Megatron turns align_param_gather off without virtual stages (arguments.py:976-979): each stage
    // gathers its one bucket (stages > 0 are not bucketed) at its first forward pre-hook.
    const sizes = { s: 2048, b: 1, h: 4096, heads: 32, groups: 8, ffn: 14336, vocab: 32000 };
    const base: TrainingSetup = { sizes, tp: 8, sp: true, layers: 8, pp: 2, gpus: 256, globalBatch: 64, overlap: true };
    const flags = { distributedOptimizer: true, overlapGradReduce: true };
    const r = await projectStep({ ...base, ...flags, overlapParamGather: true }, h100);
    const deg = r.degrees;
    const dpCp = groupLinks(h100.system, deg).dpCp;
    const wait1 = bucketSyncUs(r.stageParams[1]!, 'bf16', true, deg.dp, dpCp, h100.system).paramUs / 1e3;
    const [s0, s1] = [r.pipeline.ops[0]!, r.pipeline.ops[1]!];
    const p2p = s1[0]!.t0 - s0[0]!.t1 - wait1;
    const plain = await projectStep({ ...base, ...flags }, h100);
    // Stage 1's first forward starts its whole gather after stage 0's first forward and the send.
    expect(p2p).toBeCloseTo(plain.pipeline.ops[1]![0]!.t0 - plain.pipeline.ops[0]![0]!.t1, 9);
    expect(r.paramGatherMs).toBeGreaterThanOrEqual(wait1);
    // The same gather with virtual stages (align_param_gather on) hides in the warm-up: less exposed.
    const v2 = await projectStep({ ...base, ...flags, overlapParamGather: true, vpp: 2, globalBatch: 64 }, h100);
    expect(v2.paramGatherMs).toBeLessThan(r.paramGatherMs);
  });

  it('counts a tied embedding once with p = 1 and all-reduces its gradient between the end stages with p > 1', async () => {
    const untied = await projectStep(setup(), box);
    const tied = await projectStep(setup({ tiedEmbeddings: true }), box);
    expect(untied.memory.params - tied.memory.params).toBe((vocab / 2) * h);
    expect(tied.embeddingAllReduceMs).toBe(0);
    const pp = await projectStep(setup({ layers: 8, pp: 2, tiedEmbeddings: true }), box);
    expect(pp.embeddingAllReduceMs).toBeGreaterThan(0);
  });

  it('splits the sequence over cp ranks and exchanges K, V in a ring', async () => {
    const big = { s: 8192, b: 1, h: 4096, heads: 32, groups: 8, ffn: 14336, vocab: 128256 };
    const base = { sizes: big, tp: 8, sp: true, layers: 4, gpus: 16, globalBatch: 16, overlap: true };
    const one = await projectStep({ ...base, gpus: 8, globalBatch: 8 }, h100);
    const two = await projectStep({ ...base, cp: 2 }, h100);
    expect(two.degrees.dp).toBe(1);
    expect(two.tokensPerStep).toBe(one.tokensPerStep * 2);
    // Half the tokens per rank: the layers' activations halve, so the peak falls.
    expect(two.memory.totalBytes).toBeLessThan(one.memory.totalBytes);
    expect(two.exposedByGroup.cp).toBeGreaterThanOrEqual(0);
    await expect(projectStep({ ...base, cp: 3, gpus: 24 }, h100)).rejects.toThrow(/multiple of 2·cp = 6/);
  });

  it('prices --cp-comm-type a2a and allgather as exposed exchanges, and refuses a2a where the heads do not split', async () => {
    const big = { s: 8192, b: 1, h: 4096, heads: 32, groups: 8, ffn: 14336, vocab: 128256 };
    const base = { sizes: big, tp: 2, sp: true, layers: 4, gpus: 8, globalBatch: 8, overlap: true, cp: 4 };
    const ring = await projectStep(base, h100);
    const a2a = await projectStep({ ...base, cpExchange: { type: 'a2a' } }, h100);
    const ag = await projectStep({ ...base, cpExchange: { type: 'allgather' } }, h100);
    // The ring hides its sends under blocks; the all-to-alls and all-gathers run alone.
    expect(a2a.exposedByGroup.cp).toBeGreaterThan(ring.exposedByGroup.cp);
    expect(ag.exposedByGroup.cp).toBeGreaterThan(ring.exposedByGroup.cp);
    expect(a2a.stepMs).toBeGreaterThan(ring.stepMs);
    // t 8: 4 query heads and 1 KV head per rank do not split over 4 all-to-all ranks (TE asserts it).
    await expect(
      projectStep({ ...base, tp: 8, gpus: 32, globalBatch: 8, cpExchange: { type: 'a2a' } }, h100),
    ).rejects.toThrow(/multiples of it/);
  });
});
