import { describe, expect, it } from 'vitest';
import { chunkRecompute } from '../../../../src/projection/layer/recompute.ts';
import { peakOf, stageMemory } from '../../../../src/projection/pipeline/memory-timeline.ts';
import { simulatePipeline } from '../../../../src/projection/pipeline/pipeline-schedule.ts';

const a = { full: 100, coreAttention: 40, input: 5, mlp: 30, normOutputs: 8 };

describe('recomputation policies', () => {
  it('selective keeps everything but core attention and recomputes n core attentions', () => {
    expect(chunkRecompute(4, a, { granularity: 'selective' })).toEqual({
      keptBytes: 4 * 60,
      backwardTransientBytes: 40,
      recomputedLayers: 0,
      recomputedCoreAttention: 4,
      recomputedMlp: 0,
      recomputedNorms: 0,
    });
  });

  it('--recompute-modules: each module drops what it keeps inside and runs again; the largest is the transient', () => {
    expect(chunkRecompute(4, a, { granularity: 'selective', modules: ['mlp', 'layernorm'] })).toEqual({
      keptBytes: 4 * (100 - 30 - 8),
      backwardTransientBytes: 30,
      recomputedLayers: 0,
      recomputedCoreAttention: 0,
      recomputedMlp: 4,
      recomputedNorms: 4,
    });
    const all = chunkRecompute(4, a, { granularity: 'selective', modules: ['core_attn', 'mlp', 'layernorm'] });
    expect([all.keptBytes, all.backwardTransientBytes]).toEqual([4 * (100 - 40 - 30 - 8), 40]);
    // Fused norms (Transformer Engine's spec) leave layernorm nothing to drop and nothing to rerun.
    const fused = chunkRecompute(4, { ...a, normOutputs: 0 }, { granularity: 'selective', modules: ['layernorm'] });
    expect([fused.keptBytes, fused.recomputedNorms]).toEqual([400, 0]);
  });

  it('full uniform keeps one input per unit of k layers and recomputes every layer', () => {
    expect(chunkRecompute(5, a, { granularity: 'full', method: 'uniform', layers: 2 })).toEqual({
      keptBytes: 3 * 5,
      backwardTransientBytes: 200,
      recomputedLayers: 5,
      recomputedCoreAttention: 0,
    });
  });

  it('full block checkpoints the first k layers and keeps the rest whole', () => {
    expect(chunkRecompute(5, a, { granularity: 'full', method: 'block', layers: 2 })).toEqual({
      keptBytes: 2 * 5 + 3 * 100,
      backwardTransientBytes: 100,
      recomputedLayers: 2,
      recomputedCoreAttention: 0,
    });
    expect(chunkRecompute(3, a, undefined).keptBytes).toBe(300);
  });
});

describe('memory by lifetime', () => {
  it('takes the peak over live intervals, not the sum of each class’s maximum', () => {
    const m = peakOf(0, [
      { class: 'resident', label: 'w', bytes: 10, t0: 0, t1: 10 },
      { class: 'transient', label: 'x', bytes: 5, t0: 1, t1: 2 },
      { class: 'transient', label: 'y', bytes: 7, t0: 2, t1: 3 },
      { class: 'perMicroBatch', label: 'a', bytes: 3, t0: 2.5, t1: 4 },
    ]);
    expect(m.peakBytes).toBe(20); // 10 + 7 + 3 at t = 2.5; the maxima would sum to 25
    expect(m.peakAtMs).toBe(2.5);
    expect(m.atPeak).toEqual({ resident: 10, perStep: 0, perMicroBatch: 3, transient: 7 });
  });

  it('holds min(p − i, m) micro-batches of activations on 1F1B stage i', () => {
    const run = simulatePipeline({ p: 4, v: 1, m: 8, forwardMs: () => 1, backwardMs: () => 2, p2pMs: 0 });
    const alloc = {
      resident: [{ label: 'weights', bytes: 1000 }],
      perStep: [],
      keptBytes: () => 10,
      backwardTransientBytes: () => 0,
      forwardTransientBytes: () => 0,
      lossBytes: () => 0,
    };
    for (let i = 0; i < 4; i++) {
      const s = stageMemory(run, i, alloc, run.spanMs);
      expect(s.peakBytes).toBe(1000 + 10 * Math.min(4 - i, 8));
    }
  });
});
