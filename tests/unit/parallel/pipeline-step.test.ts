import { describe, expect, it } from 'vitest';
import { pipelineScheduleNames } from '../../../src/mesh/pipeline-schedules.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { runPipelineInProcess } from '../../../src/parallel/pipeline-in-process.ts';
import { assertPipelineModel, chunkBlocks, type PipelineModel } from '../../../src/parallel/pipeline-model.ts';
import { comparePipeline, gatherPipeline, pipelineReference } from '../../../src/parallel/pipeline-oracle.ts';
import type { OracleReport } from '../../../src/parallel/oracle.ts';

const failures = (r: OracleReport) =>
  r.entries
    .filter((e) => !e.pass)
    .map((e) => `${e.tensor}: ${e.maxAbs.toExponential(2)} > ${e.tol.toExponential(2)}`)
    .join('; ');

/** The classroom layer's sizes, L = 8 blocks (divisible by p·v for p ≤ 4, v ≤ 2), m = 4. */
const model = (
  o: Partial<PipelineModel> & Pick<PipelineModel, 'p' | 'schedule'>,
  tp = 1,
  sp = false,
): PipelineModel => ({
  layer: configFromPreset('classroom', { tp, sp }),
  layers: 8,
  v: o.schedule === 'interleaved' ? 2 : 1,
  m: 4,
  ...o,
});

async function oracle(mdl: PipelineModel) {
  const outs = await runPipelineInProcess(mdl);
  return { outs, report: comparePipeline(mdl, await pipelineReference(mdl), gatherPipeline(mdl, outs)) };
}

// The ranks' executor in Node: the CPU twins on in-process TP and PP groups, against the plain
// one-device loop (pipelineReference). The GPU tests (tests/gpu/ranks/pipeline.test.ts) run the same
// executor on the rank workers.
describe('a pipeline step in process matches one device: loss and every gradient', () => {
  for (const schedule of pipelineScheduleNames)
    for (const p of [2, 4])
      for (const tp of [1, 2])
        it(`${schedule}, p = ${p}, t = ${tp}`, async () => {
          const { report } = await oracle(model({ p, schedule }, tp));
          expect(report.pass, failures(report)).toBe(true);
        }, 60_000);

  it('with SP at t = 2 (1F1B and ZB-H1, p = 2), and with m = 8', async () => {
    for (const schedule of ['1f1b', 'zb-h1'] as const) {
      const { report } = await oracle(model({ p: 2, schedule, m: 8 }, 2, true));
      expect(report.pass, `${schedule}: ${failures(report)}`).toBe(true);
    }
  }, 60_000);

  it("with Megatron's uneven first and last stages (L = 6, p = 4: 1 + 2 + 2 + 1)", async () => {
    const mdl = model({ p: 4, schedule: '1f1b', layers: 6, first: 1, last: 1 });
    expect(chunkBlocks(mdl)).toEqual([[[0]], [[1, 2]], [[3, 4]], [[5]]]);
    const { report } = await oracle(mdl);
    expect(report.pass, failures(report)).toBe(true);
  }, 60_000);

  it('fails when the run misses a micro-batch: the reference of m − 1 is far outside the tolerance', async () => {
    const mdl = model({ p: 2, schedule: 'zb-h1' });
    const got = gatherPipeline(mdl, await runPipelineInProcess(mdl));
    const short = await pipelineReference(mdl, { steps: 1 }, mdl.m - 1);
    const r = comparePipeline(mdl, { ...short, losses: got.losses }, got);
    expect(r.pass).toBe(false);
    expect(r.worst.maxAbs / r.worst.tol).toBeGreaterThan(10);
  }, 60_000);

  it('records every pass of the schedule on each stage, W only under ZB-H1', async () => {
    const { outs } = await oracle(model({ p: 2, schedule: 'zb-h1' }));
    for (const o of outs) expect(o.spans.map((s) => s.pass).join('')).toMatch(/^[FBW]{12}$/);
    const { outs: plain } = await oracle(model({ p: 2, schedule: '1f1b' }));
    for (const o of plain) expect(o.spans.map((s) => s.pass).join('')).toMatch(/^[FB]{8}$/);
  }, 60_000);
});

describe('a pipeline model the ranks refuse, with the rule', () => {
  it('L not splittable, the interleaved rule on m, no vocabulary', () => {
    expect(() => assertPipelineModel(model({ p: 4, schedule: '1f1b', layers: 6 }))).toThrow(
      /layers \(6\) must divide evenly over p = 4/,
    );
    expect(() => assertPipelineModel(model({ p: 4, schedule: '1f1b', layers: 7, first: 1, last: 1 }))).toThrow(
      /remaining 5 layers must divide evenly over the 2 other stages/,
    );
    expect(() => assertPipelineModel(model({ p: 2, schedule: 'interleaved', m: 3 }))).toThrow(
      /multiple of p = 2.*Legal m: 2, 4, 6, 8/,
    );
    expect(() =>
      assertPipelineModel({ ...model({ p: 2, schedule: '1f1b' }), layer: configFromPreset('gpt2-layer') }),
    ).toThrow(/needs a vocabulary/);
  });
});

// Two Adam steps (β1 0.9, β2 0.999 as Megatron's defaults; lr 1e-2 and ε 1e-2 so that the update is
// Lipschitz in the gradient with a constant of 1/ε = 100: weightTolerance).
const adam = { lr: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-2 };
const twoSteps = { steps: 2, adam };

describe('two optimizer steps in process: the weights match one device', () => {
  for (const schedule of pipelineScheduleNames)
    it(`${schedule}, p = 2, t = 2`, async () => {
      const mdl = model({ p: 2, schedule }, 2);
      const got = gatherPipeline(mdl, await runPipelineInProcess(mdl, twoSteps));
      const r = comparePipeline(mdl, await pipelineReference(mdl, twoSteps), got, twoSteps);
      expect(r.pass, failures(r)).toBe(true);
      expect(
        r.entries.filter((e) => !e.tensor.startsWith('loss') && !e.tensor.includes(' d') && !/^d/.test(e.tensor))
          .length,
      ).toBe(8 * 6 + 2);
    }, 60_000);

  it('fails against the weights after one step', async () => {
    const mdl = model({ p: 2, schedule: '1f1b' });
    const got = gatherPipeline(mdl, await runPipelineInProcess(mdl, twoSteps));
    const one = await pipelineReference(mdl, { steps: 1, adam });
    const r = comparePipeline(
      mdl,
      { ...(await pipelineReference(mdl, twoSteps)), weights: one.weights },
      got,
      twoSteps,
    );
    expect(r.pass).toBe(false);
    expect(r.worst.maxAbs / r.worst.tol).toBeGreaterThan(10);
  }, 60_000);
});
