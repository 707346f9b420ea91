import { describe, expect, it } from 'vitest';
import { stageMemoryCheck } from '../../../src/accounting/pipeline-stage-memory.ts';
import type { PipelineScheduleName } from '../../../src/mesh/pipeline-schedules.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { runPipelineInProcess } from '../../../src/parallel/pipeline-in-process.ts';
import type { PipelineModel } from '../../../src/parallel/pipeline-model.ts';

const model = (schedule: PipelineScheduleName, p: number, tp: number, tpOverlapChunks = 1): PipelineModel => ({
  layer: { ...configFromPreset('classroom', { tp, sp: tp > 1 }), tpOverlapChunks },
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
  // ZB-H1 at t 4 gathers the QKV output (2 KV groups < t: W reads the gradient's slice); with 2 TP-overlap
  // chunks the MLP's backward re-gathers its input in rounds (W reads the shard and the rounds).
  for (const [schedule, p, tp, chunks] of [
    ['1f1b', 2, 1, 1],
    ['1f1b', 4, 1, 1],
    ['zb-h1', 2, 1, 1],
    ['zb-h1', 4, 2, 1],
    ['zb-h1', 2, 4, 1],
    ['zb-h1', 2, 2, 2],
  ] as const)
    it(`${schedule}, p ${p}, t ${tp}${chunks > 1 ? `, ${chunks} TP-overlap chunks` : ''}, m 4`, async () => {
      const mdl = model(schedule, p, tp, chunks);
      const outs = await runPipelineInProcess(mdl);
      for (const o of outs) {
        const check = stageMemoryCheck(mdl, o.stage, o.tpRank, o.spans);
        const where = `stage ${o.stage}, TP rank ${o.tpRank}`;
        expect(check.passes.length, where).toBe(o.spans.length);
        expect(check.mismatches, where).toEqual([]);
        // Under ZB-H1 a waiting backward holds W's inputs and gradient buffers (checked exactly above); none otherwise.
        if (schedule === 'zb-h1') expect(Math.max(...check.passes.map((x) => x.measured.deferredW))).toBeGreaterThan(0);
        else expect(check.passes.every((x) => x.measured.deferredW === 0)).toBe(true);
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

  it('a waiting backward that kept one tensor W does not read would be caught', async () => {
    const mdl = model('zb-h1', 2, 1);
    const [o] = await runPipelineInProcess(mdl);
    // The attention probabilities [b, heads, s, s] of one block: B's softmax backward reads them, no weight gradient does.
    const probs = mdl.layer.b * mdl.layer.heads * mdl.layer.s * mdl.layer.s * 4;
    const waiting = (s: (typeof o.spans)[number]) => s.classes!.deferredW > 0;
    const spans = o!.spans.map((s) =>
      waiting(s) ? { ...s, classes: { ...s.classes!, deferredW: s.classes!.deferredW + probs } } : s,
    );
    expect(o!.spans.filter(waiting).length).toBeGreaterThan(0);
    expect(stageMemoryCheck(mdl, 0, 0, spans).mismatches).toHaveLength(o!.spans.filter(waiting).length);
  });
});
