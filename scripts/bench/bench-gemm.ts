// npm run bench:gemm [-- --json] [-- --save FILE] [-- --runs N] [-- --all-variants] [-- --node] [-- --fresh] [-- --cache FILE] [-- --shapes LIST]:
// GEMM GFLOP/s of the tuned tiling against the naive kernel on the same shapes, in one run, in
// headless Chromium on its WebGPU adapter or (--node) in Node through Dawn on the machine's Vulkan adapter.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { GemmBenchReport } from '../../src/bench/gemm-bench.ts';
import { maxRuns, minSampledMs } from '../../src/bench/gemm-bench-sampling.ts';
import { gemmBenchShapes } from '../../src/bench/gemm-bench-shapes.ts';
import { byCompileCost, type GemmVariant } from '../../src/kernels/gemm-variant-names.ts';
import { denseProblem, gemmFlops } from '../../src/reference/gemm.ts';
import { median } from '../../src/core/stats.ts';
import { startStealMeter } from './cpu-steal.ts';
import { dawnAdapterOrRerun, runInNode } from '../device/dawn-node.ts';
import { clearGemmCache, defaultGemmCacheFile, readGemmCache, writeGemmCache } from './gemm-cache-file.ts';
import { checkOutputPaths } from '../cli/output-path.ts';

const usage =
  'usage: npm run bench:gemm -- [--json] [--save FILE] [--runs N] [--all-variants] [--node] [--fresh] [--cache FILE] [--shapes "square 1024,row-parallel t=8"]\n' +
  '  --runs N         N ≥ 5 timed runs per shape and kernel, median reported\n' +
  "  --all-variants   time every variant at full size and print the chosen one's margin to the fastest\n" +
  '  --variants LIST  with --all-variants, time only these (and the chosen one), e.g. rb4,quad8wide,quad8,quad16\n' +
  '  --node           run the same WGSL in Node through Dawn (the `webgpu` package) instead of Chromium\n' +
  '  --save FILE      also write the JSON report (as --json prints it) to FILE\n' +
  `  --fresh          clear the tuning cache first, so every shape class is tuned again\n` +
  `  --cache FILE     tuning cache (default ${defaultGemmCacheFile})\n` +
  `  --shapes LIST    only these shapes, by name: ${gemmBenchShapes()
    .map((s) => s.name)
    .join(', ')}`;

const { values } = parseArgs({
  options: {
    json: { type: 'boolean', default: false },
    save: { type: 'string' },
    runs: { type: 'string', default: '5' },
    'all-variants': { type: 'boolean', default: false },
    node: { type: 'boolean', default: false },
    fresh: { type: 'boolean', default: false },
    cache: { type: 'string', default: defaultGemmCacheFile },
    shapes: { type: 'string' },
    variants: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log(usage);
  process.exit(0);
}
const fail = (msg: string): never => {
  console.error(`bench:gemm: ${msg}`);
  process.exit(2);
};
const runs = Number(values.runs);
if (!Number.isInteger(runs) || runs < 5)
  fail(`--runs must be an integer ≥ 5 (the median of at least 5 runs is reported); got "${values.runs}".`);
const all = gemmBenchShapes();
const shapes = values.shapes
  ? values.shapes.split(',').map((name) => {
      const s = all.find((x) => x.name === name.trim());
      return (
        s ?? fail(`--shapes: no shape named "${name.trim()}"; the shapes are ${all.map((x) => x.name).join(', ')}.`)
      );
    })
  : all;

const variants = values.variants?.split(',').map((v) => v.trim() as GemmVariant);
for (const v of variants ?? [])
  if (!byCompileCost.includes(v)) fail(`--variants: no variant "${v}"; the variants are ${byCompileCost.join(', ')}.`);
if (variants && !values['all-variants']) fail('--variants needs --all-variants.');

checkOutputPaths('bench:gemm', { '--save': values.save });
if (values.fresh) clearGemmCache(values.cache);
let stored;
try {
  stored = readGemmCache(values.cache);
} catch (e) {
  fail((e as Error).message);
}
const args = { runs, shapes, allVariants: values['all-variants'], variants, stored };
const progress = (line: string): boolean => process.stderr.write(`${line}\n`);

let host: string;
let report: GemmBenchReport;
const steal = startStealMeter();
if (values.node) {
  const { gpu, note } = await dawnAdapterOrRerun();
  host = `Node ${process.version} through Dawn (the webgpu package); ${note}`;
  report = await runInNode<GemmBenchReport>('/src/bench/gemm-bench.ts', 'runGemmBench', {
    ...args,
    gpu,
    onProgress: progress,
  });
} else {
  // Imported here: --node runs without Playwright (scripts/device/device-pack.ts does not carry it).
  const { runInBrowser } = await import('../device/browser-run.ts');
  host = 'headless Chromium';
  report = await runInBrowser<GemmBenchReport>('/src/bench/gemm-bench.ts', 'runGemmBench', args, {
    onProgress: progress,
  });
}
writeGemmCache(values.cache, report.stored);
const stolen = steal();

const json = JSON.stringify({ host, cpuSteal: stolen, ...report }, null, 2);
if (values.save) writeFileSync(values.save, `${json}\n`);
if (values.json) {
  console.log(json);
} else {
  const t = report.timing;
  const tuned = report.rows.filter((r) => r.tuning).length;
  console.log(`GEMM benchmark on ${report.adapter} (${host})`);
  console.log(report.note);
  if (stolen !== undefined)
    console.log(
      `CPU steal during the run: ${(100 * stolen).toFixed(1)}% (time the host gave to other guests${stolen > 0.05 ? '; above 5%, every figure here is noisier than usual' : ''})`,
    );
  console.log(
    `timing: ${t.method}${t.method === 'timestamp-query' ? (t.quantized ? ' (quantized to 100 µs)' : ' (not quantized)') : ''}; median of ${report.runs} runs after a warm-up (more where a kernel's runs span < ${minSampledMs} ms: up to ${maxRuns}; the "runs" column)`,
  );
  console.log(
    `tuning: ${tuned} of ${report.rows.length} shapes tuned in this run at full size, the rest decided earlier (cache ${values.cache}, kernels ${report.kernelHash})`,
  );
  console.log(`tilings chosen: ${report.variants.join('; ')}`);
  const pad = (s: string | number, n: number): string => String(s).padStart(n);
  // Every variant timed on some shape, in first-seen order (a shape's chosen one may be timed there alone).
  const variants = values['all-variants'] ? [...new Set(report.rows.flatMap((r) => Object.keys(r.runsMs)))] : [];
  const width = (v: string): number => Math.max(10, v.length + 2);
  const gf = (r: GemmBenchReport['rows'][number], v: string): string => {
    const ms = (r.runsMs as Record<string, number[] | undefined>)[v];
    return ms ? (gemmFlops(denseProblem(r.M, r.N, r.K)) / median(ms) / 1e6).toFixed(2) : '—';
  };
  console.log(
    `${'shape'.padEnd(22)}${pad('M', 6)}${pad('N', 6)}${pad('K', 6)}  ${'chosen'.padEnd(13)}${pad('GFLOP/s', 9)}${pad('naive', 9)}${pad('×naive', 8)}${pad('runs', 6)}` +
      (variants.length
        ? `  ${'fastest'.padEnd(13)}${pad('margin', 8)}${variants.map((v) => pad(v, width(v))).join('')}`
        : ''),
  );
  for (const r of report.rows) {
    console.log(
      `${r.name.padEnd(22)}${pad(r.M, 6)}${pad(r.N, 6)}${pad(r.K, 6)}  ${r.chosen.padEnd(13)}${pad(r.gflops.toFixed(2), 9)}${pad(r.naiveGflops?.toFixed(3) ?? '—', 9)}${pad(r.speedup?.toFixed(1) ?? '—', 8)}${pad(r.runsMs[r.chosen]!.length, 6)}` +
        (variants.length
          ? `  ${(r.fastest ?? '').padEnd(13)}${pad(`${(100 * (r.margin ?? 0)).toFixed(1)}%`, 8)}${variants.map((v) => pad(gf(r, v), width(v))).join('')}`
          : ''),
    );
  }
  if (variants.length) {
    const worst = Math.max(...report.rows.map((r) => r.margin ?? 0));
    const ups = report.rows.flatMap((r) => (r.speedup === undefined ? [] : [r.speedup]));
    console.log(
      `chosen vs fastest at full size: worst margin ${(100 * worst).toFixed(1)}% (target ≤ 5%)` +
        (ups.length
          ? `; ×naive ${Math.min(...ups).toFixed(1)}–${Math.max(...ups).toFixed(1)} (target ≥ 15×)`
          : '; naive not timed') +
        '. GFLOP/s columns: median per variant.',
    );
  }
}
process.exit(0);
