// npm run sweep -- --tp 1,2,4,8 [--sp] [--preset NAME | --s N --h N --heads N …] [--net NAME] [--json] [--trace FILE]
// npm run sweep -- --experts E --topk K [--ep N] [--etp N] [--tp N] [--sp] … : one MoE layer (sweep-moe.ts)
// Runs the layer at each TP degree across real rank workers in headless Chromium, checks every
// run against TP=1, and prints per degree the local GEMM shapes and speed, the collectives,
// exposed communication, per-rank memory and the oracle's verdict.
import { writeFileSync } from 'node:fs';
import type { SweepReport } from '../../src/session/sweep.ts';
import { parseInterconnect } from '../../src/hardware/interconnect.ts';
import type { LayerConfig } from '../../src/parallel/config.ts';
import { configFromSettings, parseDegrees, parseWhole } from '../../src/parallel/config-parse.ts';
import { validateConfig } from '../../src/parallel/validate.ts';
import { budgetRun, memoryBudget } from '../../src/accounting/budget.ts';
import { printSweep } from './sweep-print.ts';
import { checkOutputPaths } from '../cli/output-path.ts';
import { cliValues, rawSizeSettings, sizeFlagOptions } from '../cli/size-flags.ts';
import { exitAfterFlush } from '../cli/exit-after-flush.ts';
import { pipelineFlagsGiven, sweepPipeline } from './sweep-pipeline.ts';

const usage = `usage: npm run sweep -- --tp 1,2,4,8 [--sp] [--preset classroom|gpt2-layer|llama-gqa]
       [--s N] [--b N] [--h N] [--heads N] [--groups N] [--ffn N] [--vocab N] [--seed N]
       [--net pcie-gen3|nvlink-a100|nvswitch-h100|custom:<alpha µs>:<GB/s>] [--json] [--trace FILE]
       [--dump FILE]   (weights, inputs, output, loss, gradients as .safetensors; FILE.tp<t>.safetensors for several t)
       [--skip-sp-norm-grad-allreduce]   (demonstration: with --sp the oracle then flags dg1, dg2)
       [--tp-overlap C]   (chunked TP overlap: the MLP pair's GEMMs in C ≥ 2 chunks in ring order; under SP C divides t or is t·m with m dividing s/t; 1 = off)
       npm run sweep -- --experts E … runs one MoE layer instead (npm run sweep -- --experts 8 --help)
       npm run sweep -- --moe-grid runs the MoE block over its whole oracle grid (--moe-grid --help)
       npm run sweep -- --pipeline-grid runs the pipeline over its whole oracle grid (--pipeline-grid --help)
   a pipeline × data-parallel run on a mesh of tp·pp·dp ≤ 16 workers (one TP degree), when any of these is given:
       [--pp P] [--dp D] [--micro-batches M] [--schedule afab|1f1b|interleaved|zb-h1] [--vpp V]
       [--layers L] [--global-batch G] [--distributed-optimizer] [--baseline]   (--baseline: also the same model on its TP group alone, p 1 d 1)`;

/** FILE itself for one degree; else FILE with .tp<t>[-sp] before its extension. */
function dumpFile(file: string, c: LayerConfig, degrees: number): string {
  if (degrees === 1) return file;
  const dot = file.lastIndexOf('.');
  const [stem, ext] = dot > file.lastIndexOf('/') ? [file.slice(0, dot), file.slice(dot)] : [file, '.safetensors'];
  return `${stem}.tp${c.tp}${c.sp ? '-sp' : ''}${ext}`;
}

function fail(message: string): never {
  process.stderr.write(`sweep: ${message}\n${usage}\n`);
  process.exit(2);
}

const options = {
  tp: { type: 'string', default: '1,2,4,8' },
  sp: { type: 'boolean', default: false },
  ...sizeFlagOptions,
  seed: { type: 'string' },
  net: { type: 'string', default: 'pcie-gen3' },
  json: { type: 'boolean', default: false },
  trace: { type: 'string' },
  dump: { type: 'string' },
  'skip-sp-norm-grad-allreduce': { type: 'boolean', default: false },
  'tp-overlap': { type: 'string', default: '1' },
  pp: { type: 'string' },
  dp: { type: 'string' },
  'micro-batches': { type: 'string' },
  schedule: { type: 'string' },
  vpp: { type: 'string' },
  layers: { type: 'string' },
  'global-batch': { type: 'string' },
  'distributed-optimizer': { type: 'boolean', default: false },
  baseline: { type: 'boolean', default: false },
  help: { type: 'boolean', default: false },
} as const;

// --experts: the MoE block instead of the dense layer (its own flags, sweep-moe-args.ts).
const argv = process.argv.slice(2);
if (argv.some((a) => a === '--experts' || a.startsWith('--experts=')))
  await (await import('./sweep-moe.ts')).sweepMoe(argv);
// --moe-grid: the MoE block at every point of its oracle grid (sweep-moe.ts).
if (argv.includes('--moe-grid')) await (await import('./sweep-moe.ts')).sweepMoeGrid(argv);
// --pipeline-grid: the pipeline at every point of its oracle grid (sweep-pipeline-grid.ts).
if (argv.includes('--pipeline-grid')) await (await import('./sweep-pipeline-grid.ts')).sweepPipelineGrid(argv);

const values = cliValues(options, usage, fail);

// Everything is parsed and validated before a browser starts.
const raw = rawSizeSettings(values);
// A pipeline run (sweep-pipeline.ts) exits with its oracle's verdict.
if (pipelineFlagsGiven(values)) await sweepPipeline(values, raw, fail);
let configs: LayerConfig[] = [];
try {
  parseInterconnect(values.net);
  const tpOverlapChunks = parseWhole('--tp-overlap', values['tp-overlap'], 1);
  configs = parseDegrees(values.tp).map((tp) => ({
    tpOverlapChunks,
    ...configFromSettings(raw, tp),
    sp: values.sp,
    skipSpNormGradAllReduce: values['skip-sp-norm-grad-allreduce'],
  }));
} catch (e) {
  fail((e as Error).message);
}
// Output files first: a run that would end in a failed write does not start.
checkOutputPaths('sweep', { '--trace': values.trace });

// Memory is checked against the page's default budget and WebGPU's guaranteed buffer limits (src/accounting/budget.ts).
const budget = memoryBudget(undefined);
const refused = configs.map((c) => {
  const v = validateConfig(c);
  return { c, errors: v.ok ? budgetRun(c, budget).errors : v.errors };
});
if (refused.some(({ errors }) => errors.length)) {
  for (const { c, errors } of refused)
    for (const e of errors) process.stderr.write(`sweep: t=${c.tp}${c.sp ? ' SP' : ''}: ${e.message}\n`);
  process.exit(2);
}

// Loaded only now: Vite and Playwright take seconds to import, and a refusal above needs neither.
const { runInBrowser } = await import('../device/browser-run.ts');
const report = await runInBrowser<SweepReport>(
  '/src/session/sweep.ts',
  'runSweep',
  { configs, net: values.net, trace: !!values.trace, dump: !!values.dump },
  {
    onProgress: (line) => process.stderr.write(`${line}\n`),
  },
);
if (values.trace) {
  writeFileSync(values.trace, JSON.stringify(report.trace ?? {}));
  process.stderr.write(`trace written to ${values.trace} (open it in ui.perfetto.dev or chrome://tracing)\n`);
}
if (values.dump) {
  for (const d of report.degrees) {
    const file = dumpFile(values.dump, d.config, report.degrees.length);
    writeFileSync(file, Buffer.from(d.safetensors ?? '', 'base64'));
    process.stderr.write(`tensors of t=${d.config.tp}${d.config.sp ? ' SP' : ''} written to ${file}\n`);
  }
}
const degrees = report.degrees.map((d) => ({ ...d, safetensors: undefined }));
if (values.json) console.log(JSON.stringify({ ...report, degrees, trace: undefined }, null, 2));
else printSweep(report);
await exitAfterFlush(report.degrees.every((d) => d.oracle.pass) ? 0 : 1);
