// npm run bench:gemm [-- --json] [-- --runs N]: GEMM GFLOP/s in headless Chromium on its WebGPU
// adapter, the tuned tiling against the naive kernel on the same shapes, in one run.
import { parseArgs } from 'node:util';
import type { GemmBenchReport } from '../src/bench/gemm-bench.ts';
import { runInBrowser } from './browser-run.ts';

const { values } = parseArgs({
  options: {
    json: { type: 'boolean', default: false },
    runs: { type: 'string', default: '5' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log(
    'usage: npm run bench:gemm -- [--json] [--runs N]   (N ≥ 5 timed runs per shape and kernel, median reported)',
  );
  process.exit(0);
}
const runs = Number(values.runs);
if (!Number.isInteger(runs) || runs < 5) {
  console.error(
    `bench:gemm: --runs must be an integer ≥ 5 (the median of at least 5 runs is reported); got "${values.runs}".`,
  );
  process.exit(2);
}

const report = await runInBrowser<GemmBenchReport>(
  '/src/bench/gemm-bench.ts',
  'runGemmBench',
  { runs },
  {
    onProgress: (line) => process.stderr.write(`${line}\n`),
  },
);

if (values.json) {
  console.log(JSON.stringify(report, null, 2));
} else {
  const t = report.timing;
  console.log(`GEMM benchmark on ${report.adapter}`);
  console.log(report.note);
  console.log(
    `timing: ${t.method}${t.method === 'timestamp-query' ? (t.quantized ? ' (quantized to 100 µs)' : ' (not quantized)') : ''}; median of ${report.runs} runs after a warm-up`,
  );
  console.log(`tilings chosen: ${report.variants.join('; ')}`);
  const pad = (s: string | number, n: number) => String(s).padStart(n);
  console.log(
    `${'shape'.padEnd(22)}${pad('M', 6)}${pad('N', 6)}${pad('K', 6)}  ${'chosen'.padEnd(10)}${pad('GFLOP/s', 9)}${pad('naive', 9)}${pad('×naive', 8)}`,
  );
  for (const r of report.rows) {
    console.log(
      `${r.name.padEnd(22)}${pad(r.M, 6)}${pad(r.N, 6)}${pad(r.K, 6)}  ${r.chosen.padEnd(10)}${pad(r.gflops.toFixed(2), 9)}${pad(r.naiveGflops.toFixed(3), 9)}${pad(r.speedup.toFixed(1), 8)}`,
    );
  }
}
