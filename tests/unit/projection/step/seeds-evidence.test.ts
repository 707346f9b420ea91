import { describe, expect, it } from 'vitest';
import { seedsEvidence, seedsV100 } from '../../../../src/megatron/scenarios.ts';
import { systems } from '../../../../src/hardware/systems.ts';
import { fixedBudget, projectStep, type StepProjection } from '../../../../src/projection/step/cluster-projection.ts';
import type { TrainingSetup } from '../../../../src/megatron/training-setup.ts';

/**
 * The seeds' table (seed 001 §1.4, docs/sources.md) against the projection of the scenario file, with
 * the issue's tolerances: the TP8/TP1 throughput ratio within a factor 1.5 of 0.173, the TP8/TP1 memory
 * ratio within ±25% of 0.166, and SP slower than no SP at TP2 and TP4. No constant of the model was
 * fitted to these numbers (README lists each constant and its source).
 */
const machine = { system: systems[seedsV100.system], dtype: seedsV100.dtype };

async function table(sp: boolean): Promise<Map<number, StepProjection>> {
  const rows = await fixedBudget({ ...seedsV100.setup, sp }, seedsV100.degrees, machine);
  return new Map(rows.flatMap((r) => (r.ok ? [[r.tp, r.step] as const] : [])));
}

describe("the seeds' V100 evidence", () => {
  it('has a tiny GPT whose TP1 peak memory is 20–35% above the seeds’ 2.85 GiB: the cross entropy’s fp32 copy', async () => {
    // The sizes were chosen for 2.89 GiB when the loss kept 16-bit logits; the peak now also holds
    // the fp32 softmax vocab-parallel cross entropy keeps (4·s·b·V) and, during the loss's forward,
    // the 16-bit logits beside it (2·s·b·V): 0.77 GiB more. The sizes are not refitted.
    const step = (await table(false)).get(1)!;
    const gib = step.memory.totalBytes / 2 ** 30;
    expect(gib / seedsEvidence.memoryGiB.tp1).toBeGreaterThan(1.2);
    expect(gib / seedsEvidence.memoryGiB.tp1).toBeLessThan(1.35);
    const { s, b, vocab } = seedsV100.setup.sizes;
    const states = step.memory.weightBytes + step.memory.gradBytes + step.memory.optimizerBytes;
    expect(step.memory.totalBytes - states - step.memory.activationBytes).toBe(0);
    expect(step.memory.activationBytes).toBeGreaterThan((4 + 2) * s * b * vocab);
  });

  it('reproduces the TP8/TP1 throughput ratio within a factor 1.5 and the memory ratio within ±25%', async () => {
    const t = await table(false);
    const tput = t.get(8)!.tokensPerS / t.get(1)!.tokensPerS;
    expect(tput).toBeGreaterThan(seedsEvidence.throughputRatio / 1.5);
    expect(tput).toBeLessThan(seedsEvidence.throughputRatio * 1.5);
    const mem = t.get(8)!.memory.totalBytes / t.get(1)!.memory.totalBytes;
    expect(Math.abs(mem / seedsEvidence.memoryRatio - 1)).toBeLessThan(0.25);
  });

  it('makes SP cost throughput at TP2 and TP4', async () => {
    const plain = await table(false);
    const sp = await table(true);
    for (const t of [2, 4]) expect(sp.get(t)!.tokensPerS / plain.get(t)!.tokensPerS - 1).toBeLessThan(0);
  });
});

/**
 * The rest of the seeds' table (seed 001 §1.4) on the same scenario, changing only what each row
 * changes. Seq 4096 rows: s = 4096, the scenario's micro-batch 8 and global batch 64, at t = 2, 4, 8
 * (t = 1 does not fit the V100's 32 GiB). PP8 rows: p = 8 on 8 GPUs against p = 1 on one GPU at
 * the same m; 10 layers do not split evenly over 8 stages, so the split is Megatron's uneven
 * one with 2 layers on the first and last stage (--decoder-first/last-pipeline-num-layers 2, the
 * only symmetric legal split). Bands are the projection as it comes out; where it misses the
 * seeds the comment says by how much. Nothing was fitted to these rows.
 */
describe("the seeds' V100 evidence: long sequences and pipelining", () => {
  const long = { ...seedsV100.setup, sizes: { ...seedsV100.setup.sizes, s: 4096 } };
  const step = (over: Partial<TrainingSetup>) => projectStep({ ...long, tp: 2, ...over }, machine);

  it('seq 4096 with SP saves little memory at t = 2 (seeds 1.3–3.8%), more at t = 4 and 8 (a miss: seeds say not monotone)', async () => {
    const saved: number[] = [];
    for (const tp of [2, 4, 8]) {
      const plain = await step({ tp });
      const sp = await step({ tp, sp: true });
      saved.push(1 - sp.memory.totalBytes / plain.memory.totalBytes);
    }
    // Projected: 3.5%, 9.9%, 20.4% (the final norm's saved input is SP-split too).
    expect(saved[0]).toBeGreaterThan(0.013);
    expect(saved[0]).toBeLessThan(0.038);
    expect(saved[1]).toBeGreaterThan(saved[0]!);
    expect(saved[2]).toBeGreaterThan(saved[1]!);
  });

  it('seq 4096 with full recompute saves 65–75% of memory (seeds 77.6–78.1%) for 25–33% of throughput (seeds 27–30%)', async () => {
    for (const tp of [2, 4, 8]) {
      const plain = await step({ tp });
      const redo = await step({ tp, recompute: true });
      const saved = 1 - redo.memory.totalBytes / plain.memory.totalBytes;
      const lost = 1 - redo.tokensPerS / plain.tokensPerS;
      // Projected: saved 68.8–69.2%, lost 27.4–30.8%.
      expect(saved).toBeGreaterThan(0.65);
      expect(saved).toBeLessThan(0.75);
      expect(lost).toBeGreaterThan(0.25);
      expect(lost).toBeLessThan(0.33);
    }
  });

  const pp1 = (m: number) => projectStep({ ...seedsV100.setup, tp: 1, gpus: 1, globalBatch: 8 * m }, machine);
  const pp8 = (m: number) =>
    projectStep(
      { ...seedsV100.setup, tp: 1, gpus: 8, pp: 8, firstStageLayers: 2, lastStageLayers: 2, globalBatch: 8 * m },
      machine,
    );

  it('PP8 with one micro-batch is slower than one GPU (seeds 0.586×; projected 0.88×: a miss) and leaves ≥ 87.5% of the middle stages idle', async () => {
    const one = await pp1(1);
    const eight = await pp8(1);
    const ratio = eight.tokensPerS / one.tokensPerS;
    expect(ratio).toBeLessThan(0.95);
    expect(ratio).toBeGreaterThan(0.8);
    for (const idle of eight.pipeline.idleShare.slice(1, -1)) expect(idle).toBeGreaterThanOrEqual(0.875);
  });

  it('PP8 with 16 micro-batches is within a factor 1.5 of the seeds’ 2.59× one GPU (projected 1.94×: the output stage is the bottleneck)', async () => {
    const ratio = (await pp8(16)).tokensPerS / (await pp1(16)).tokensPerS;
    expect(ratio).toBeGreaterThan(2.59 / 1.5);
    expect(ratio).toBeLessThan(2.59 * 1.5);
  });

  it('PP8 stages differ in parameters because the embedding and output sit on the end stages (seeds 2.76×; here 10.0×)', async () => {
    const eight = await pp8(1);
    const { h, vocab } = seedsV100.setup.sizes;
    const layer = eight.stageParams[1]!;
    const ends = vocab * h + 2 * layer; // embedding (or output) [V, h] and two layers
    expect(eight.stageParams[0]).toBe(ends);
    expect(eight.stageParams[7]).toBe(ends);
    expect(Math.max(...eight.stageParams) / Math.min(...eight.stageParams)).toBeCloseTo(ends / layer, 9);
  });
});
