// npm run sweep -- --experts E --topk K [--ep N] [--etp N] [--tp N] [--sp] … (sweep-moe-args.ts)
// npm run sweep -- --experts E … --layer: the transformer layer with that block as its MLP
// npm run sweep -- --moe-grid: every point of the MoE oracle grid (src/parallel/moe-grid.ts) on rank workers
// One MoE layer forward and backward on rank workers in headless Chromium, checked against one
// device; prints per rank the step, tokens per expert, drops, all-to-all bytes, and the oracle.
import type { MoeGridReport } from '../../src/session/moe-grid-run.ts';
import type { MoeLayerSweepReport, MoeModelSweepReport } from '../../src/session/moe-layer-run.ts';
import type { MoeSweepReport } from '../../src/session/moe-run.ts';
import { exitAfterFlush } from '../cli/exit-after-flush.ts';
import { parseGridArgs, refuseGrid, runGrid } from './grid-cli.ts';
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
  const onProgress = (line: string) => process.stderr.write(`${line}\n`);
  if (parsed.layer && parsed.pattern) {
    const { layer, args, pattern } = parsed;
    const report = await runInBrowser<MoeModelSweepReport>(
      '/src/session/moe-layer-run.ts',
      'runMoeModelSweep',
      { layer, config: args.config, layout: args.layout, pattern },
      { onProgress },
    );
    if (parsed.json) console.log(JSON.stringify(report, null, 2));
    else printMoeModelSweep(report);
    return exitAfterFlush(report.oracle.ok ? 0 : 1);
  }
  if (parsed.layer) {
    const { layer, args } = parsed;
    const report = await runInBrowser<MoeLayerSweepReport>(
      '/src/session/moe-layer-run.ts',
      'runMoeLayerSweep',
      { layer, config: args.config, layout: args.layout, repeats: parsed.repeats },
      { onProgress },
    );
    if (parsed.json) console.log(JSON.stringify(report, null, 2));
    else printMoeLayerSweep(report);
    return exitAfterFlush(report.layerOracle.ok ? 0 : 1);
  }
  const report = await runInBrowser<MoeSweepReport>(
    '/src/session/moe-run.ts',
    'runMoeSweep',
    { ...parsed.args, repeats: parsed.repeats },
    { onProgress },
  );
  if (parsed.json) console.log(JSON.stringify(report, null, 2));
  else printMoeSweep(report);
  return exitAfterFlush(report.oracle.ok ? 0 : 1);
}

/** L layers' report as text: per layer dense, or the block's load, drops, busiest rank, losses and check; then the whole check. */
export function printMoeModelSweep(r: MoeModelSweepReport): void {
  const out = (s: string) => process.stdout.write(`${s}\n`);
  const c = r.layer;
  out(
    `${r.pattern.length} layers (p 1): s ${c.s}, b ${c.b}, h ${c.h}, ${c.heads} heads in ${c.groups} KV groups, tp ${c.tp}${c.sp && c.tp > 1 ? ' SP' : ''} — ${r.adapter}`,
  );
  r.pattern.forEach((moe, i) => {
    const x = r.layers[i];
    if (!moe || !x) return out(`layer ${i}: dense MLP`);
    out(
      `layer ${i}: MoE — load per expert ${x.expertLoad.join(' ')}; dropped ${x.dropped}; busiest rank ${x.straggler.rank} (${x.straggler.rows} rows); aux ${x.aux.toExponential(4)}, z ${x.z.toExponential(4)}; block ${x.oracle.ok ? 'pass' : 'FAIL'}`,
    );
  });
  const o = r.oracle;
  const worst = o.checks.reduce((a, x) => (x.worst / x.tolerance > a.worst / a.tolerance ? x : a));
  out(
    `oracle over ${r.pattern.length} layers: ${o.ok ? 'pass' : 'FAIL'} — worst ${worst.what} ${worst.worst.toExponential(2)} ≤ ${worst.tolerance.toExponential(2)}`,
  );
  for (const f of o.failures) out(`  ${f}`);
}

/** The layer's report as text: the block's (printMoeSweep), then the layer and its oracle. */
export function printMoeLayerSweep(r: MoeLayerSweepReport): void {
  const out = (s: string) => process.stdout.write(`${s}\n`);
  const c = r.layer;
  out(
    `layer: ln1 → attention (s ${c.s}, b ${c.b}, ${c.heads} heads in ${c.groups} KV groups, tp ${c.tp}${c.sp && c.tp > 1 ? ' SP' : ''}) → residual → ln2 → the MoE block below → residual${c.vocab > 0 ? `, vocab ${c.vocab} (embedding, output layer, cross entropy)` : ''}`,
  );
  printMoeSweep(r);
  if (r.loss !== undefined) out(`cross entropy ${r.loss.toFixed(4)} (mean over every replica's tokens), + aux + z`);
  const o = r.layerOracle;
  const worst = o.checks.reduce((a, x) => (x.worst / x.tolerance > a.worst / a.tolerance ? x : a));
  out(
    `layer oracle: ${o.ok ? 'pass' : 'FAIL'} — y, ${c.vocab > 0 ? 'the loss' : 'dx'}, the block's input, dW_qkv, dW_o, dg1, dg2${c.vocab > 0 ? ', dEmb, dW_out' : ''} of every rank; worst ${worst.what} ${worst.worst.toExponential(2)} ≤ ${worst.tolerance.toExponential(2)}`,
  );
  for (const f of o.failures) out(`  ${f}`);
}

const gridUsage = `usage: npm run sweep -- --moe-grid [--h N] [--tokens N] [--ffn N] [--seed N] [--json]
   the MoE block on rank workers at every point of EP {1, 2, 4} × ETP {1, 2} × TP {1, 2} with SP × E {4, 8}
   × k {1, 2} × {dropless, capacity 1} × {alltoall, allgather} (192 points), each against one device`;

/** The grid's verdicts as text: one line per point, then the count that passed. */
export function printMoeGrid(r: MoeGridReport): void {
  const out = (s: string) => process.stdout.write(`${s}\n`);
  const z = r.sizes;
  out(`MoE grid: h ${z.h}, ${z.tokens} tokens per rank, f ${z.ffn}, seed ${z.seed} — ${r.adapter}`);
  out('tp etp ep dispatcher  E  k  capacity  ranks  dropped  routing  margin/bound  worst ÷ tolerance  verdict');
  for (const x of r.rows) {
    const p = x.point;
    out(
      `${String(p.tp).padStart(2)} ${String(p.etp).padStart(3)} ${String(p.ep).padStart(2)} ${p.dispatcher.padEnd(10)} ${String(p.E).padStart(2)} ${String(p.k).padStart(2)}  ${(p.capacity === undefined ? 'dropless' : String(p.capacity)).padEnd(8)}  ${String(x.ranks).padStart(5)}  ${String(x.dropped).padStart(7)}  ${(x.sameRouting ? 'same' : 'DIFFERS').padEnd(7)}  ${(x.margin / x.logitError).toFixed(0).padStart(12)}  ${x.worstRatio.toFixed(3).padStart(17)}  ${x.ok ? 'pass' : `FAIL ${x.failures.join('; ')}`}`,
    );
  }
  const passed = r.rows.filter((x) => x.ok).length;
  out(
    `${passed} of ${r.rows.length} points equal one device; worst ${Math.max(...r.rows.map((x) => x.worstRatio)).toFixed(3)} of the tolerance`,
  );
}

/** Runs the whole MoE grid and exits: 0 when every point passes, 1 when not, 2 on bad input. */
export async function sweepMoeGrid(argv: readonly string[]): Promise<never> {
  const { sizes, json, errors } = await parseGridArgs(
    argv,
    '--moe-grid',
    {
      h: { default: 16, min: 1 },
      tokens: { default: 8, min: 1 },
      ffn: { default: 6, min: 1 },
      seed: { default: 41, min: 0 },
    },
    gridUsage,
  );
  if (sizes.ffn % 2 !== 0 && errors.length === 0)
    errors.push(`--ffn is ${sizes.ffn}; ETP 2 splits it, so write an even width (e.g. --ffn 6).`);
  if (errors.length > 0) return refuseGrid(errors, gridUsage);
  return runGrid<MoeGridReport>('/src/session/moe-grid-run.ts', 'runMoeGrid', sizes, json, printMoeGrid);
}
