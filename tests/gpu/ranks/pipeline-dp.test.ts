import { afterAll, describe, expect, test } from 'vitest';
import { pipelineScheduleNames, type PipelineScheduleName } from '../../../src/mesh/pipeline-schedules.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';
import type { DpSyncMode } from '../../../src/parallel/dp-options.ts';
import type { OracleReport } from '../../../src/parallel/oracle.ts';
import type { PipelineModel } from '../../../src/parallel/pipeline-model.ts';
import type { RankPool } from '../../../src/ranks/pool.ts';
import { runPipeline } from '../../../src/session/pipeline-run.ts';
import { createLayerPool } from '../../../src/session/pools.ts';
import type { LayerWorkerPrograms } from '../../../src/session/layer-run.ts';

const failures = (r: OracleReport) =>
  r.entries
    .filter((e) => !e.pass)
    .map((e) => `${e.tensor}: ${e.maxAbs.toExponential(2)} > ${e.tol.toExponential(2)}`)
    .join('; ');

// Pipeline × data parallel on the rank workers (SwiftShader here): d = 2 replicas of a pipeline of
// L = 8 classroom blocks over p stages, m = 4 micro-batches each; each stage's gradients averaged
// over its DP group on GPU tensors (all-reduce, or the distributed optimizer's reduce-scatter → Adam
// on the shard → all-gather). Oracle: every replica's losses, its averaged gradients and its weights
// after two Adam steps against one device accumulating the global batch's m·d = 8 micro-batches
// (pipelineReplicasOracle; tolerance (L + m·d)·oracleTolerance for gradients, weightTolerance for
// weights). Grid: every schedule at t 1 × p 2 × d 2 (4 workers), each with and without the distributed
// optimizer; and on the largest mesh, t 2 × p 4 × d 2 (16 workers), every schedule, afab and ZB-H1 with
// the all-reduce, 1F1B and interleaved with the distributed optimizer — so both syncs also run under TP
// (t 2 × p 2 × d 2 adds no code path to these; the in-process twin, tests/unit/parallel/pipeline-dp.test.ts,
// runs it with both syncs). The whole grid (every schedule × t {1, 2} × p {2, 4} × d {1, 2} × both syncs)
// is `npm run sweep -- --pipeline-grid`.
const twoSteps = { steps: 2, adam: { lr: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-2 } };

const model = (tp: number, p: number, schedule: PipelineScheduleName): PipelineModel => ({
  layer: configFromPreset('classroom', { tp }),
  layers: 8,
  p,
  v: schedule === 'interleaved' ? 2 : 1,
  m: 4,
  schedule,
});

const modes: DpSyncMode[] = ['all-reduce', 'distributed-optimizer'];
const grids: { tp: number; pp: number; cases: [PipelineScheduleName, DpSyncMode][] }[] = [
  {
    tp: 1,
    pp: 2,
    cases: pipelineScheduleNames.flatMap((s) => modes.map((m): [PipelineScheduleName, DpSyncMode] => [s, m])),
  },
  {
    tp: 2,
    pp: 4,
    cases: [
      ['afab', 'all-reduce'],
      ['1f1b', 'distributed-optimizer'],
      ['interleaved', 'distributed-optimizer'],
      ['zb-h1', 'all-reduce'],
    ],
  },
];

for (const { tp, pp, cases } of grids)
  describe(`a pipeline with 2 replicas on t ${tp} × p ${pp} × d 2 rank workers`, () => {
    let pool: RankPool<LayerWorkerPrograms> | undefined;
    afterAll(async () => {
      await pool?.dispose();
    });

    test.each(cases)(
      '%s, %s: every replica equals one device on the global batch',
      { timeout: 600_000 },
      async (schedule, dp) => {
        pool ??= await createLayerPool(tp * pp * 2, 'auto', 60_000, { degrees: { tp, pp, dp: 2 } });
        const mdl = model(tp, pp, schedule);
        const run = await runPipeline(pool, { model: mdl, training: twoSteps, dp });
        expect(run.oracle.pass, failures(run.oracle)).toBe(true);
        expect(run.oracle.entries.filter((e) => e.tensor.startsWith('replica 1: loss')).length).toBe(mdl.m);
        // Each rank synced once over its DP group: one gradient sync, and with the distributed optimizer one all-gather.
        const syncs = run.trace.filter((e) => e.dpSync);
        expect(syncs.length).toBe(run.outputs.length * (dp === 'distributed-optimizer' ? 2 : 1));
        // The classroom's records (parallel/pipeline-dp.ts): micro-batch 0's received boundary tensors of the
        // first step on every rank, and with the distributed optimizer each shard's sample, whose received
        // gradient is the mean of the replicas' own gradients there (float32 sums of d = 2 terms: ≤ 2 ulp).
        for (const o of run.outputs) {
          // Virtual stage k's activation goes to stage (k + 1) mod p, its gradient back to stage k mod p.
          const ks = Array.from({ length: pp * mdl.v - 1 }, (_, k) => k);
          const want = [
            ...ks.filter((k) => (k + 1) % pp === o.stage).map((k) => `act.${k}.0`),
            ...ks.filter((k) => k % pp === o.stage).map((k) => `grad.${k}.0`),
          ];
          expect(o.boundaries?.map((b) => b.tensor).sort()).toEqual(want.sort());
          expect(o.boundaries![0]!.values.some((x) => x !== 0)).toBe(true);
        }
        if (dp === 'distributed-optimizer')
          run.outputs.forEach((o, r) => {
            const q = run.places[r]!.dp;
            const peers = run.outputs.filter((x, k) => x.stage === o.stage && x.tpRank === o.tpRank && k !== r);
            const all = [o, ...peers].map((x) => x.zero!.local[q]!);
            o.zero!.grad.forEach((g, i) => {
              const mean = all.reduce((a, l) => a + l[i]!, 0) / all.length;
              expect(Math.abs(g - mean)).toBeLessThanOrEqual(2 * 2 ** -23 * Math.abs(mean) + 1e-30);
            });
            expect(o.zero!.paramAfter.some((x, i) => x !== o.zero!.paramBefore[i])).toBe(true);
          });
        const w = run.oracle.worst;
        console.log(
          `t ${tp} × p ${pp} × d 2 ${schedule} ${dp}: step ${run.measured.spanMs.toFixed(1)} ms, idle share per stage ${run.measured.idleShare.map((x) => x.toFixed(3)).join(' ')}; worst ${w.tensor} ${w.maxAbs.toExponential(2)} (tol ${w.tol.toExponential(2)})`,
        );
      },
    );
  });
