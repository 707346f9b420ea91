import { describe, expect, test } from 'vitest';
import { rankMemory } from '../../../src/accounting/accounting.ts';
import { accountingChecks, livePeak, liveSeries, rankLiveMemory } from '../../../src/accounting/live-memory.ts';
import { configFromPreset, presetNames } from '../../../src/parallel/config.ts';
import { replayStepMemory } from '../../../src/parallel/memory-replay.ts';
import { makePlan } from '../../../src/parallel/plan.ts';
import { legalTpDegrees } from '../../../src/parallel/validate.ts';
import { presets } from '../../../src/parallel/config.ts';

describe('live bytes over a step', () => {
  test('the peak is what is alive together, not the sum of each allocation: two transients that never meet peak at the larger', () => {
    const p = livePeak([
      { class: 'weights', label: 'w', bytes: 10, t0: 0, t1: 10 },
      { class: 'workspace', label: 'a', bytes: 5, t0: 1, t1: 3 },
      { class: 'workspace', label: 'b', bytes: 7, t0: 3, t1: 4 },
    ]);
    // b starts at t = 3 where a ends: a is gone first (half-open intervals).
    expect(p).toEqual({ peakBytes: 17, peakAt: 3, alive: [0, 2] });
  });

  test('an interval of no length is never alive', () => {
    expect(livePeak([{ class: 'workspace', label: 'x', bytes: 9, t0: 2, t1: 2 }]).peakBytes).toBe(0);
  });

  test('the series stacks each class on [t, next t)', () => {
    const s = liveSeries(
      [
        { class: 'w', label: 'w', bytes: 4, t0: 0, t1: 6 },
        { class: 'a', label: 'a', bytes: 2, t0: 2, t1: 4 },
      ],
      ['w', 'a'],
    );
    expect(s).toEqual([
      { t: 0, bytes: { w: 4, a: 0 } },
      { t: 2, bytes: { w: 4, a: 2 } },
      { t: 4, bytes: { w: 4, a: 0 } },
      { t: 6, bytes: { w: 0, a: 0 } },
    ]);
  });
});

// The layer's own code on shapes (the plan backend) makes the same tensors the GPU ranks make; the
// record's classes come from what happened (registered weights, the step's gradients, forward
// tensors read after forward), so it checks the accounting's tables, which are written by hand.
describe('the recorded buffers of every preset, t and SP equal the accounting (staging aside: the plan stages nothing)', () => {
  for (const preset of presetNames)
    for (const sp of [false, true])
      for (const tp of legalTpDegrees(presets[preset], sp).filter((t) => t <= 8 && (t > 1 || !sp)))
        test(`${preset} at t=${tp}${sp ? ' with SP' : ''}: weights, gradients and activations kept for backward on every rank`, async () => {
          const c = configFromPreset(preset, { tp, sp });
          const { plan } = await makePlan(c);
          for (let r = 0; r < tp; r++) {
            const rec = await replayStepMemory(c, r);
            expect(rec.ops, 'one position per plan op').toBe(plan.ops.length);
            for (const x of accountingChecks(rankLiveMemory(rec), rankMemory(plan, r)))
              expect(x.recordedBytes, `rank ${r} ${x.class}`).toBe(x.predictedBytes);
          }
        });
});

describe('what the record says of each buffer', () => {
  test('each buffer names the plan op that made it, and activations are made in forward and alive into backward', async () => {
    const c = configFromPreset('llama-gqa', { tp: 2, sp: true });
    const { plan } = await makePlan(c);
    const rec = await replayStepMemory(c, 1);
    const backwardStarts = plan.ops.findIndex((o) => o.phase !== 'forward');
    for (const b of rec.buffers) {
      expect(b.madeBy.kind, b.tensor).not.toBe('unused');
      if (b.madeBy.kind === 'upload' || b.madeBy.kind === 'unused') continue;
      const op = plan.ops[b.madeBy.opIndex]!;
      expect(op.name, b.tensor).toBe(b.madeBy.label);
      expect(op.kind === 'collective', b.tensor).toBe(b.madeBy.kind === 'collective');
    }
    const acts = rec.buffers.filter((b) => b.class === 'activations');
    expect(acts.length).toBeGreaterThan(0);
    for (const b of acts) {
      expect(b.allocAt, b.tensor).toBeLessThan(backwardStarts);
      expect(b.freeAt, b.tensor).toBeGreaterThan(backwardStarts);
    }
    // Under SP the all-gathered [s, b, h] norm output is workspace, freed in forward; its [s/t, b, h] shard is kept.
    const gathered = rec.buffers.filter((b) => b.madeBy.kind === 'collective' && b.madeBy.label === 'ln1.gather');
    expect(gathered.map((b) => [b.class, b.shape, b.freeAt < backwardStarts])).toEqual([
      ['workspace', [c.s, c.b, c.h], true],
    ]);
    expect(rec.buffers.filter((b) => b.class === 'weights').every((b) => b.madeBy.kind === 'upload')).toBe(true);
  });

  test('like autograd, every activation is alive when forward ends and freed after the last backward op that reads it; the peak of gpt2-layer at t = 2 comes in backward', async () => {
    const c = configFromPreset('gpt2-layer', { tp: 2 });
    const rec = await replayStepMemory(c, 0);
    const live = rankLiveMemory(rec);
    const { plan } = await makePlan(c);
    const m = rankMemory(plan, 0);
    const backwardStarts = plan.ops.findIndex((o) => o.phase !== 'forward');
    const aliveAt = (t: number, k: string) =>
      rec.buffers.filter((b) => b.class === k && b.allocAt <= t && t < b.freeAt).reduce((a, b) => a + b.bytes, 0);
    expect(aliveAt(backwardStarts, 'activations')).toBe(m.activationBytes);
    // Alive at the step's end: only what the last op (ln1.wgrad) reads, x and its rstd, freed after it.
    const last = plan.ops.length - 1;
    expect(plan.ops[last]!.name).toBe('ln1.wgrad');
    const atEnd = rec.buffers.filter((b) => b.class === 'activations' && b.freeAt === rec.ops).map((b) => b.tensor);
    expect(atEnd.sort()).toEqual(['ln1.rstd', 'x']);
    // Forward temporaries die in forward: nothing made in forward that backward does not read is alive into it.
    for (const b of rec.buffers.filter((x) => x.class === 'workspace' && x.allocAt < backwardStarts))
      expect(b.freeAt <= backwardStarts || b.tensor === 'y', b.tensor).toBe(true);
    expect(live.peak.peakAt).toBeGreaterThan(backwardStarts);
    expect(live.peak.peakAt).toBeLessThan(rec.ops);
    const at = live.peak.alive.map((i) => live.intervals[i]!);
    const sum = (k: string) => at.filter((x) => x.class === k).reduce((a, x) => a + x.bytes, 0);
    expect(sum('weights')).toBe(m.parameterBytes);
    expect(sum('activations')).toBeLessThan(m.activationBytes); // the MLP's are freed by then
    expect(live.peak.peakBytes).toBe(at.reduce((a, x) => a + x.bytes, 0));
    // Kept to the step's end (the layer's old rule), the same buffers peak higher.
    const kept = rankLiveMemory({
      ...rec,
      buffers: rec.buffers.map((b) => (b.class === 'weights' ? b : { ...b, freeAt: rec.ops })),
    });
    expect(kept.peak.peakBytes).toBeGreaterThan(live.peak.peakBytes);
  });
});
