// `npx tsx scripts/project/project-published.ts [--json]`: every published Megatron-LM run
// (src/megatron/published-runs.ts) projected, its error against the published step, and the
// projected step cut into its terms (src/projection/studies/step-breakdown.ts), ms per step.
import { systems } from '../../src/hardware/systems.ts';
import { publishedRuns, publishedStepS } from '../../src/megatron/published-runs.ts';
import { publishedSetup } from '../../src/projection/studies/published-comparison.ts';
import { stepBreakdown, type StepTerms } from '../../src/projection/studies/step-breakdown.ts';
import { alignedTable } from '../cli/text-table.ts';

const json = process.argv.includes('--json');
const rows: { id: string; layout: string; publishedMs: number; error: number; terms: StepTerms }[] = [];
for (const run of publishedRuns) {
  const mapped = publishedSetup(run);
  const terms = await stepBreakdown(mapped.setup, {
    system: systems[run.system],
    dtype: run.dtype,
    kernels: mapped.kernels,
  });
  const publishedMs = publishedStepS(run) * 1e3;
  rows.push({
    id: run.id,
    layout: `t${run.layout.tp} p${run.layout.pp} m${terms.microBatches}`,
    publishedMs,
    error: terms.stepMs / publishedMs - 1,
    terms,
  });
}
if (json) {
  console.log(JSON.stringify(rows, null, 2));
} else {
  const ms = (x: number): string => (Math.abs(x) >= 1000 ? `${(x / 1e3).toFixed(2)} s` : `${x.toFixed(1)}`);
  const pct = (x: number): string => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}%`;
  const share = (x: number, t: StepTerms): string => `${((100 * x) / t.stepMs).toFixed(1)}%`;
  console.log('Step terms on the busiest stage, ms per step (share of the projected step):');
  console.log(
    alignedTable(
      [
        'run',
        'layout',
        'published',
        'projected',
        'error',
        'layers',
        'CP ring',
        'recompute',
        'emb+out',
        'bubble',
        'DP grad',
        'param AG',
        'optimizer',
        'finalize',
      ],
      rows.map((r) => {
        const t = r.terms;
        return [
          r.id,
          r.layout,
          ms(r.publishedMs),
          ms(t.stepMs),
          pct(r.error),
          share(t.layersMs, t),
          share(t.cpRingMs, t),
          share(t.recomputeMs, t),
          share(t.embeddingOutputMs, t),
          share(t.bubbleMs, t),
          share(t.dpGradMs, t),
          share(t.paramGatherMs, t),
          share(t.optimizerMs, t),
          share(t.finalizeMs, t),
        ];
      }),
    ).join('\n'),
  );
  console.log('\nOne layer, forward + backward of one micro-batch, ms (share of the layer):');
  console.log(
    alignedTable(
      [
        'run',
        'layer',
        'linear GEMMs',
        'GEMM eff.',
        'attention',
        'memory-bound',
        'host gaps',
        'overlap cost',
        'TP exposed',
        'other',
      ],
      rows.map((r) => {
        const l = r.terms.layer;
        const s = (x: number): string => `${((100 * x) / l.totalMs).toFixed(1)}%`;
        return [
          r.id,
          l.totalMs.toFixed(2),
          s(l.linearGemmMs),
          `${(100 * l.linearGemmEfficiency).toFixed(1)}%`,
          s(l.attentionMs),
          s(l.memoryMs),
          s(l.hostGapMs),
          s(l.overlapCostMs),
          s(l.tpExposedMs),
          s(l.otherMs),
        ];
      }),
    ).join('\n'),
  );
  const errors = rows.map((r) => Math.abs(r.error));
  const mean = (xs: readonly number[]): number => xs.reduce((a, e) => a + e, 0) / xs.length;
  console.log(
    `\n${rows.length} runs; mean |error| ${(100 * mean(errors)).toFixed(1)}%, largest ${(100 * Math.max(...errors)).toFixed(1)}%, signed mean ${pct(mean(rows.map((r) => r.error)))}, beyond 15%: ${errors.filter((e) => e > 0.15).length}`,
  );
}
