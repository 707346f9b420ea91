import { describe, expect, it } from 'vitest';
import { stageMemoryCheck } from '../../../src/accounting/pipeline-stage-memory.ts';
import type { PipelineScheduleName } from '../../../src/mesh/pipeline-schedules.ts';
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
        const check = stageMemoryCheck(mdl, o.stage, o.tpRank, o.spans);
        const where = `stage ${o.stage}, TP rank ${o.tpRank}`;
        expect(check.passes.length, where).toBe(o.spans.length);
        expect(check.mismatches, where).toEqual([]);
        // Under ZB-H1 each waiting backward also holds what it made and freed: the same bytes for each.
        if (schedule === 'zb-h1') {
          expect(check.backwardHeld.length, where).toBe(1);
          expect(check.backwardHeld[0]!, where).toBeGreaterThan(0);
        } else expect(check.passes.every((x) => x.measured.deferredW === 0)).toBe(true);
        // The last stage keeps each micro-batch's loss [s, b] to return it; nothing else is left over.
        const loss = o.stage === p - 1 ? mdl.layer.s * mdl.layer.b * 4 : 0;
        let forwards = 0;
        for (const x of check.passes) {
          if (x.pass.pass === 'F') forwards++;
          expect(x.measured.workspace, where).toBe(forwards * loss);
        }
      }
    });

  it('a stage that kept one more tensor per micro-batch would be caught', async () => {
    const mdl = model('1f1b', 2, 1);
    const [o] = await runPipelineInProcess(mdl);
    const spans = o!.spans.map((s) => ({ ...s, classes: { ...s.classes!, activations: s.classes!.activations + 4 } }));
    expect(stageMemoryCheck(mdl, 0, 0, spans).mismatches).toHaveLength(spans.length);
  });
});
