import { describe, expect, it } from 'vitest';
import { seedsEvidence, seedsV100 } from '../../../src/megatron/scenarios.ts';
import { systems } from '../../../src/hardware/systems.ts';
import { fixedBudget, type StepProjection } from '../../../src/projection/cluster-projection.ts';

/**
 * The seeds' table (seed 001 §1.4) against the projection of the scenario file, with the issue's
 * tolerances: the TP8/TP1 throughput ratio within a factor 1.5 of 0.173, the TP8/TP1 memory
 * ratio within ±25% of 0.166, and SP slower than no SP at TP2 and TP4. No constant of the model
 * was fitted to these numbers (README lists each constant and its source).
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
