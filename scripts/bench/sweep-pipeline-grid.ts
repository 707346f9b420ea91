// npm run sweep -- --pipeline-grid: every point of the pipeline oracle grid (src/parallel/pipeline-grid.ts)
// on rank workers in headless Chromium, each against one device; a table, or --json; exit 1 if any fails.
import {
  pipelineGrid,
  pipelineGridDefaults,
  pipelineGridModel,
  type PipelineGridSizes,
} from '../../src/parallel/pipeline-grid.ts';
import { assertPipelineModel } from '../../src/parallel/pipeline-model.ts';
import type { PipelineGridReport } from '../../src/session/pipeline-grid-run.ts';
import { parseGridArgs, refuseGrid, runGrid } from './grid-cli.ts';

const d = pipelineGridDefaults;
const gridUsage = `usage: npm run sweep -- --pipeline-grid [--layers N] [--micro-batches N] [--seed N] [--json]
   the pipeline on rank workers at every point of afab, 1f1b, interleaved (v 2), zb-h1 × t {1, 2} × p {2, 4}
   × d {1, 2} × {all-reduce, distributed optimizer} (64 points, up to 16 workers), L classroom blocks
   (default ${d.layers}), m micro-batches per replica (default ${d.m}); each point's loss, gradients and weights
   after two Adam steps against one device on the global batch`;

/** The grid's verdicts as text: one line per point, then the count that passed and the worst ratio. */
export function printPipelineGrid(r: PipelineGridReport): void {
  const out = (s: string) => process.stdout.write(`${s}\n`);
  const z = r.sizes;
  out(`pipeline grid: L ${z.layers} classroom blocks, m ${z.m} per replica, seed ${z.seed} — ${r.adapter}`);
  out(
    'schedule     t  p  d  sync                   ranks  tensors  step ms  worst tensor                |err|     tol  ÷ tol  verdict',
  );
  for (const x of r.rows) {
    const p = x.point;
    out(
      `${p.schedule.padEnd(11)} ${String(p.tp).padStart(2)} ${String(p.pp).padStart(2)} ${String(p.dp).padStart(2)}  ${p.sync.padEnd(21)}  ${String(x.ranks).padStart(5)}  ${String(x.tensors).padStart(7)}  ${x.stepMs.toFixed(0).padStart(7)}  ${x.worst.slice(0, 26).padEnd(26)}  ${x.worstAbs.toExponential(1).padStart(7)}  ${x.worstTol.toExponential(1).padStart(6)}  ${x.worstRatio.toFixed(3).padStart(5)}  ${x.ok ? 'pass' : `FAIL ${x.failures.length} tensor${x.failures.length === 1 ? '' : 's'}: ${x.failures.slice(0, 3).join('; ')}${x.failures.length > 3 ? '; …' : ''}`}`,
    );
  }
  const passed = r.rows.filter((x) => x.ok).length;
  const worst = r.rows.reduce((w, x) => (x.worstRatio > w.worstRatio ? x : w));
  out(
    `${passed} of ${r.rows.length} points equal one device in ${r.seconds.toFixed(0)} s; worst ${worst.worstRatio.toPrecision(2)} of the tolerance (${worst.worst} at ${worst.point.schedule} t ${worst.point.tp} × p ${worst.point.pp} × d ${worst.point.dp}, ${worst.point.sync})`,
  );
}

/** Runs the whole pipeline grid and exits: 0 when every point passes, 1 when not, 2 on bad input. */
export async function sweepPipelineGrid(argv: readonly string[]): Promise<never> {
  const a = await parseGridArgs(
    argv,
    '--pipeline-grid',
    {
      layers: { default: d.layers, min: 1 },
      'micro-batches': { default: d.m, min: 1 },
      seed: { default: d.seed, min: 0 },
    },
    gridUsage,
  );
  const errors = a.errors;
  const sizes: PipelineGridSizes = { layers: a.sizes.layers, m: a.sizes['micro-batches'], seed: a.sizes.seed };
  // Every point's model as the ranks will check it (Megatron's split of L, interleaved's rule on m), before a browser starts.
  if (errors.length === 0)
    for (const pt of pipelineGrid)
      try {
        assertPipelineModel(pipelineGridModel(pt, sizes));
      } catch (e) {
        errors.push(`${pt.schedule} at t ${pt.tp} × p ${pt.pp}: ${(e as Error).message}`);
        break;
      }
  if (errors.length > 0) return refuseGrid(errors, gridUsage);
  return runGrid<PipelineGridReport>(
    '/src/session/pipeline-grid-run.ts',
    'runPipelineGrid',
    { ...sizes },
    a.json,
    printPipelineGrid,
  );
}
