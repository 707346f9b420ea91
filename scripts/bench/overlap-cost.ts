// npm run overlap-cost -- --tp 2,4 [--sp] [--preset NAME | --s N …] [--chunks 1,4] [--pairs 2] [--rounds 2] [--json]
// What overlap costs in "this browser as the cluster": for each degree and chunk count (1 = off),
// in one browser and on one pool of rank workers, every kernel of the step is timed with the ring
// moving and with nothing moving (`--pairs` pairs alternated), and the step's wall time both ways;
// the chunk counts run in alternated order `--rounds` times (off, chunked, chunked, off, …), each
// figure the shortest over the rounds. Prints per kernel both times and the ratio, and the step.
import type { SweepDegree } from '../../src/schedule/sweep-degree.ts';
import type { SweepReport } from '../../src/session/sweep.ts';
import type { LayerConfig } from '../../src/parallel/config.ts';
import { configFromSettings, parseDegrees, parseWhole } from '../../src/parallel/config-parse.ts';
import { validateConfig } from '../../src/parallel/validate.ts';
import { budgetRun, memoryBudget } from '../../src/accounting/budget.ts';
import { cliValues, rawSizeSettings, sizeFlagOptions } from '../cli/size-flags.ts';
import { alignedTable } from '../cli/text-table.ts';

const usage = `usage: npm run overlap-cost -- --tp 2,4 [--sp] [--preset classroom|gpt2-layer|llama-gqa] [--s N …]
       [--chunks 1,4]   (chunk counts of the MLP pair's collectives; 1 = tpoverlap off)
       [--pairs N]      (kernel timings with and without the ring moving, alternated; default 2)
       [--rounds N]     (times each chunk count runs, in alternated order; default 2)
       [--json]`;

function fail(message: string): never {
  process.stderr.write(`overlap-cost: ${message}\n${usage}\n`);
  process.exit(2);
}

const options = {
  tp: { type: 'string', default: '2' },
  sp: { type: 'boolean', default: false },
  ...sizeFlagOptions,
  seed: { type: 'string' },
  chunks: { type: 'string', default: '1,4' },
  pairs: { type: 'string', default: '2' },
  rounds: { type: 'string', default: '2' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', default: false },
} as const;

const values = cliValues(options, usage, fail);
const raw = rawSizeSettings(values);
const configs: LayerConfig[] = [];
let pairs = 2;
try {
  pairs = parseWhole('--pairs', values.pairs, 1);
  const rounds = parseWhole('--rounds', values.rounds, 1);
  const chunks = values.chunks.split(',').map((c) => parseWhole('a chunk count of --chunks', c.trim(), 1));
  for (const tp of parseDegrees(values.tp)) {
    if (tp < 2) throw new Error(`--tp ${tp}: a ring transfer needs t ≥ 2.`);
    for (let r = 0; r < rounds; r++)
      for (const tpOverlapChunks of r % 2 === 0 ? chunks : [...chunks].reverse())
        configs.push({ ...configFromSettings(raw, tp), sp: values.sp, tpOverlapChunks });
  }
} catch (e) {
  fail((e as Error).message);
}
const budget = memoryBudget(undefined);
for (const c of configs) {
  const v = validateConfig(c);
  const errors = v.ok ? budgetRun(c, budget).errors : v.errors;
  if (errors.length) fail(`t=${c.tp} chunks ${c.tpOverlapChunks}: ${errors.map((e) => e.message).join('; ')}`);
}

const { runInBrowser } = await import('../device/browser-run.ts');
const report = await runInBrowser<SweepReport>(
  '/src/session/sweep.ts',
  'runSweep',
  { configs, transferPairs: pairs },
  { onProgress: (line) => process.stderr.write(`${line}\n`) },
);
const failed = report.degrees.filter((d) => !d.oracle.pass);
const skipped = report.degrees.find((d) => d.transferSkipped);
if (skipped) fail(`kernels under transfer not timed: ${skipped.transferSkipped}`);

// Per (t, chunks): the rounds' shortest of each figure.
const key = (d: SweepDegree): string => `${d.config.tp}:${d.config.tpOverlapChunks ?? 1}`;
const groups = new Map<string, SweepDegree[]>();
for (const d of report.degrees) groups.set(key(d), [...(groups.get(key(d)) ?? []), d]);
const min = (xs: number[]): number => Math.min(...xs);
const summary = [...groups.values()].map((ds) => {
  const t = ds.map((d) => d.transfer!);
  return {
    tp: ds[0]!.config.tp,
    chunks: ds[0]!.config.tpOverlapChunks ?? 1,
    rounds: ds.length,
    stepWallMs: {
      aloneMs: min(t.map((x) => x.stepWallMs.aloneMs)),
      overlappedMs: min(t.map((x) => x.stepWallMs.overlappedMs)),
    },
    scheduledStepMs: {
      aloneMs: min(t.map((x) => x.scheduledStepMs.aloneMs)),
      overlappedMs: min(t.map((x) => x.scheduledStepMs.overlappedMs)),
    },
    kernels: t[0]!.kernels.map((k, i) => {
      const aloneMs = min(t.map((x) => x.kernels[i]!.aloneMs));
      const overlappedMs = min(t.map((x) => x.kernels[i]!.overlappedMs));
      return {
        op: k.op,
        aloneMs,
        overlappedMs,
        underTransfer: t.some((x) => x.kernels[i]!.underTransfer),
        slowdown: overlappedMs / aloneMs,
      };
    }),
  };
});

if (values.json) {
  console.log(JSON.stringify({ adapter: report.adapter, pairs, summary }, null, 2));
} else {
  console.log(`What overlap costs on ${report.adapter} (${pairs} pairs per run, figures the shortest over the rounds)`);
  const f = (v: number): string => v.toFixed(3);
  for (const s of summary) {
    const sum = (under: boolean, k: 'aloneMs' | 'overlappedMs'): number =>
      s.kernels.filter((x) => x.underTransfer === under).reduce((a, x) => a + x[k], 0);
    console.log(
      `\n=== t=${s.tp}${values.sp ? ' + SP' : ''}, ${s.chunks > 1 ? `chunks:${s.chunks}` : 'tpoverlap off'} ===`,
    );
    const under = s.kernels.filter((k) => k.underTransfer);
    for (const line of alignedTable(
      ['kernel under a transfer', 'alone ms', 'under transfer ms', 'ratio'],
      under.map((k) => [k.op, f(k.aloneMs), f(k.overlappedMs), `×${k.slowdown.toFixed(2)}`]),
    ))
      console.log(`  ${line}`);
    console.log(
      `  Σ kernels under a transfer (${under.length}): ${f(sum(true, 'aloneMs'))} → ${f(sum(true, 'overlappedMs'))} ms (×${(sum(true, 'overlappedMs') / sum(true, 'aloneMs')).toFixed(2)}); the other ${s.kernels.length - under.length}: ${f(sum(false, 'aloneMs'))} → ${f(sum(false, 'overlappedMs'))} ms (×${(sum(false, 'overlappedMs') / sum(false, 'aloneMs')).toFixed(2)})`,
    );
    console.log(
      `  step wall time: ${f(s.stepWallMs.overlappedMs)} ms with the ring (${f(s.stepWallMs.aloneMs)} ms with collectives that move nothing); scheduled with measured transport: ${f(s.scheduledStepMs.overlappedMs)} ms (${f(s.scheduledStepMs.aloneMs)} ms with every kernel at its time alone)`,
    );
  }
}
if (failed.length)
  fail(`the oracle failed at ${failed.map((d) => `t=${d.config.tp} chunks ${d.config.tpOverlapChunks}`).join(', ')}`);
process.exit(0);
