// npx tsx scripts/project/project-moe-published.ts [--json]
// The published MoE runs (src/megatron/moe-published-runs.ts) against their projection: step, error, and the MoE terms.
import { moePublishedRuns } from '../../src/megatron/moe-published-runs.ts';
import { compareMoePublished } from '../../src/projection/studies/moe-published.ts';
import { exitAfterFlush } from '../cli/exit-after-flush.ts';
import { alignedTable } from '../cli/text-table.ts';
import { moeSummary } from './moe-report.ts';

const json = process.argv.includes('--json');
const rows = [];
for (const run of moePublishedRuns) rows.push(await compareMoePublished(run));
if (json) {
  console.log(
    JSON.stringify(
      rows.map((r) => ({
        id: r.run.id,
        source: r.run.source,
        publishedStepS: r.publishedStepS,
        projectedStepS: r.projected.stepMs / 1e3,
        stepError: r.stepError,
        mfu: r.projected.mfu,
        memoryGiB: r.projected.memory.totalBytes / 2 ** 30,
        moe: moeSummary(r.projected),
      })),
      null,
      2,
    ),
  );
  await exitAfterFlush(0);
}
const pct = (x: number): string => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}%`;
const head = ['run', 't×p×v', 'EP', 'GPUs', 'published', 'projected', 'error', 'MFU', 'memory', 'EP exposed/layer'];
const body = rows.map((r) => {
  const m = moeSummary(r.projected)!;
  return [
    r.run.label,
    `${r.run.tp}×${r.run.pp}×${r.run.vpp}`,
    String(r.run.moe.ep),
    String(r.run.gpus),
    `${r.publishedStepS.toFixed(2)} s`,
    `${(r.projected.stepMs / 1e3).toFixed(2)} s`,
    pct(r.stepError),
    `${(100 * r.projected.mfu).toFixed(1)}%`,
    `${(r.projected.memory.totalBytes / 2 ** 30).toFixed(1)} GiB`,
    `${(m.exposedCommMs.forward + m.exposedCommMs.backward).toFixed(2)} ms`,
  ];
});
for (const line of alignedTable(head, body)) console.log(line);
const mean = rows.reduce((a, r) => a + Math.abs(r.stepError), 0) / rows.length;
console.log(`mean |error| ${(100 * mean).toFixed(1)}% over ${rows.length} runs; nothing fitted to them`);
