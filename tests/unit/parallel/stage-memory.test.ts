import { describe, expect, it } from 'vitest';
import { stageUnitBytes } from '../../../src/accounting/pipeline-stage-memory.ts';
import { stageClassBytes, stageHeld } from '../../../src/mesh/pipeline-memory.ts';
import { formatPasses, type PipelineScheduleName } from '../../../src/mesh/pipeline-schedules.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { runPipelineInProcess } from '../../../src/parallel/pipeline-in-process.ts';
import type { PipelineModel } from '../../../src/parallel/pipeline-model.ts';

const model = (schedule: PipelineScheduleName, p: number, tp: number): PipelineModel => ({
  layer: configFromPreset('classroom', { tp, sp: tp > 1 }),
  layers: 8,
  v: 1,
  m: 4,
  p,
  schedule,
});

// The ranks' executor in Node (CPU twins, in-process groups): each pass's live tensors by class, from
// the stage's own record (stage-memory.ts), against the accounting (pipeline-stage-memory.ts × the
// schedule's counts, pipeline-memory.ts). Exact: both are sums of float32 tensor sizes.
describe('live memory by class after each pass equals the accounting', () => {
  for (const [schedule, p, tp] of [
    ['1f1b', 2, 1],
    ['1f1b', 4, 1],
    ['zb-h1', 2, 1],
    ['zb-h1', 4, 2],
  ] as const)
    it(`${schedule}, p ${p}, t ${tp}, m 4`, async () => {
      const mdl = model(schedule, p, tp);
      const outs = await runPipelineInProcess(mdl);
      for (const o of outs) {
        const held = stageHeld(schedule, mdl, o.stage);
        expect(formatPasses(o.spans)).toBe(formatPasses(held.map((h) => h.pass)));
        const unit = stageUnitBytes(mdl, o.stage, o.tpRank);
        const want = stageClassBytes(held, unit);
        const got = o.spans.map((s) => s.classes!);
        const where = `stage ${o.stage}, TP rank ${o.tpRank}`;
        expect(
          got.map((g) => [g.weights, g.gradients, g.activations]),
          where,
        ).toEqual(want.map((w) => [w.weights, w.gradients, w.activations]));
        // Deferred W: the accounting's saved activations + gradient buffers per waiting backward,
        // plus what that backward made and freed (its releases wait for W), the same per backward.
        const extra = got.flatMap((g, i) => {
          const n = held[i]!.deferredW[0]!;
          return n ? [(g.deferredW - want[i]!.deferredW) / n] : [];
        });
        if (schedule === 'zb-h1') {
          expect(extra.length, where).toBeGreaterThan(0);
          expect(new Set(extra).size, `${where}: ${extra.join(', ')}`).toBe(1);
          expect(extra[0]!, where).toBeGreaterThan(0);
        } else expect(got.every((g) => g.deferredW === 0)).toBe(true);
        // The last stage keeps each micro-batch's loss [s, b] to return it; nothing else is left over.
        const losses = o.stage === p - 1 ? mdl.layer.s * mdl.layer.b * 4 : 0;
        let done = 0;
        got.forEach((g, i) => {
          if (held[i]!.pass.pass === 'F' && o.stage === p - 1) done++;
          expect(g.workspace, where).toBe(done * losses);
        });
      }
    });
});
