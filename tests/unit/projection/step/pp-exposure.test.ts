import { describe, expect, it } from 'vitest';
import { pipelineTimes } from '../../../../src/projection/pipeline/pipeline-schedule.ts';
import { pipelineP2p } from '../../../../src/projection/step/pp-exposure.ts';

/** p stages, one micro-batch: forward 1 ms, backward 2 ms per stage. */
const input = (p: number, p2pMs: number) => ({ p, v: 1, m: 1, forwardMs: () => 1, backwardMs: () => 2, p2pMs });

describe('pipelineP2p: what the sends add to the simulated span', () => {
  it('p 2, m 1, blocking sends of 0.5 ms: F0 [0,1] F1 [1.5,2.5] B1 [2.5,4.5] B0 [5,7] vs 6 ms without → 1 ms', () => {
    const pipeIn = input(2, 0.5);
    const pipeline = pipelineTimes({ ...pipeIn, senderBusyMs: 0.5 });
    expect(pipeline.spanMs).toBeCloseTo(7, 12);
    const x = pipelineP2p(pipeIn, pipeline, 0);
    expect(x.exposedMs).toBeCloseTo(1, 12);
    expect(x.overlapCostMs).toBeCloseTo(0, 12);
  });

  it('p 4: three boundaries each way, 6 sends on the critical path → 6 · 0.5 = 3 ms', () => {
    const pipeIn = input(4, 0.5);
    const x = pipelineP2p(pipeIn, pipelineTimes({ ...pipeIn, senderBusyMs: 0.5 }), 0);
    expect(x.exposedMs).toBeCloseTo(3, 12);
  });

  it('p 2, m 2, overlapped sends costing the next op 0.25 ms: exposure 1 ms, that cost 0.25 ms apart', () => {
    // Without sends: s0 F F [0,2], s1 F0 [1,2] B0 [2,4] F1 [4,5] B1 [5,7], s0 B0 [4,6] B1 [7,9]: 9 ms.
    // Sends, free: s1 F0 [1.5,2.5] B0 [2.5,4.5] F1 [4.5,5.5] B1 [5.5,7.5], s0 B0 [5,7] B1 [8,10]: 10 ms.
    // Each sent op holds its stage 0.25 ms more: s1 F1 [4.75,5.75] B1 [5.75,7.75], s0 B1 [8.25,10.25].
    const pipeIn = { ...input(2, 0.5), m: 2 };
    const costed = pipelineTimes({ ...pipeIn, senderBusyMs: 0.25 });
    expect(costed.spanMs).toBeCloseTo(10.25, 12);
    const x = pipelineP2p(pipeIn, costed, 0.25);
    expect(x.exposedMs).toBeCloseTo(1, 12);
    expect(x.overlapCostMs).toBeCloseTo(0.25, 12);
  });

  it('p 1 has no sends', () => {
    const pipeIn = input(1, 0);
    expect(pipelineP2p(pipeIn, pipelineTimes(pipeIn), 0)).toEqual({ exposedMs: 0, overlapCostMs: 0 });
  });
});
