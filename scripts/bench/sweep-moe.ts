// npm run sweep -- --experts E --topk K [--ep N] [--etp N] [--tp N] [--sp] … (sweep-moe-args.ts)
// One MoE layer forward and backward on rank workers in headless Chromium, checked against one
// device; prints per rank the step, tokens per expert, drops, all-to-all bytes, and the oracle.
import type { MoeSweepReport } from '../../src/session/moe-run.ts';
import { exitAfterFlush } from '../cli/exit-after-flush.ts';
import { moeUsage, parseMoeSweep } from './sweep-moe-args.ts';

const kib = (b: number): string => (b / 1024).toFixed(1);

/** The report as text: the layout, per rank its row, the load, the oracle. */
export function printMoeSweep(r: MoeSweepReport): void {
  const { config: c, layout: l } = r.args;
  const out = (s: string) => process.stdout.write(`${s}\n`);
  out(
    `MoE: E ${c.numMoeExperts}, top-${c.moeRouterTopk}, f ${c.moeFfnHiddenSize}, h ${r.args.h}, ${r.args.tokens} tokens per rank` +
      `${c.moeExpertCapacityFactor === null ? ', dropless' : `, capacity ${c.moeExpertCapacityFactor} (${c.moeTokenDropPolicy})`}` +
      `${c.routerSkew ? `, router skew ${c.routerSkew}` : ''} — ${r.adapter}`,
  );
  out(
    `layout: tp ${l.tp}${l.sp ? ' SP' : ''} × dp ${r.world / l.tp}, etp ${l.etp} × ep ${l.ep} × edp ${r.world / (l.etp * l.ep)} on ${r.world} ranks, ${l.dispatcher} dispatcher`,
  );
  if (r.refusal)
    out(
      `M036: every token routed ${r.copies}×; Megatron refuses this in training (${r.refusal.source}, ${r.refusal.error})`,
    );
  out(
    'rank  step ms  experts    rows per local expert  dropped  tokens per expert (own)          dispatch KiB sent per peer',
  );
  for (const x of r.ranks) {
    const experts = `${x.firstExpert}…${x.firstExpert + x.expertRows.length - 1}`;
    const dispatch = x.allToAll['moe.dispatch'];
    out(
      `${String(x.rank).padStart(4)}  ${x.stepMs.toFixed(1).padStart(7)}  ${experts.padEnd(9)}  ${x.expertRows.join(' ').padEnd(21)}  ${String(x.dropped).padStart(7)}  ${x.tokensPerExpert.join(' ').padEnd(31)}  ${dispatch ? dispatch.map(kib).join(' ') : `${kib(x.dispatchBytes)} (gathered)`}${x.duplicateOf !== null ? `  duplicate of rank ${x.duplicateOf}` : ''}`,
    );
  }
  out(
    `load per expert: ${r.expertLoad.join(' ')}; dropped ${r.dropped}; busiest rank ${r.straggler.rank} (${r.straggler.rows} rows)`,
  );
  out(`aux ${r.aux.toExponential(4)}, z ${r.z.toExponential(4)}`);
  const worst = r.oracle.checks.reduce((a, x) => (x.worst / x.tolerance > a.worst / a.tolerance ? x : a));
  out(
    `oracle: ${r.oracle.ok ? 'pass' : 'FAIL'} — same routing ${r.oracle.sameRouting ? 'yes' : 'no'} (margin ${r.oracle.margin.toExponential(2)} > ${r.oracle.logitError.toExponential(2)}), worst ${worst.what} ${worst.worst.toExponential(2)} ≤ ${worst.tolerance}`,
  );
  for (const f of r.oracle.failures) out(`  ${f}`);
}

/** Runs the MoE sweep for `argv` and exits: 0 when the oracle passes, 1 when not, 2 on bad input. */
export async function sweepMoe(argv: readonly string[]): Promise<never> {
  const parsed = parseMoeSweep(argv);
  if ('help' in parsed) {
    console.log(moeUsage);
    return exitAfterFlush(0);
  }
  if ('errors' in parsed) {
    for (const e of parsed.errors) process.stderr.write(`sweep: ${e}\n`);
    process.stderr.write(`${moeUsage}\n`);
    return exitAfterFlush(2);
  }
  // Loaded only now: Vite and Playwright take seconds to import, and a refusal above needs neither.
  const { runInBrowser } = await import('../device/browser-run.ts');
  const report = await runInBrowser<MoeSweepReport>(
    '/src/session/moe-run.ts',
    'runMoeSweep',
    { ...parsed.args },
    {
      onProgress: (line) => process.stderr.write(`${line}\n`),
    },
  );
  if (parsed.json) console.log(JSON.stringify(report, null, 2));
  else printMoeSweep(report);
  return exitAfterFlush(report.oracle.ok ? 0 : 1);
}
