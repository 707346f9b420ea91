// npm run bench:grouped-gemm [-- --json] [-- --rounds N]: the MoE grouped GEMM (one dispatch over
// every expert's rows) against E separate GEMM dispatches of the same tiling on the same token
// counts, GFLOP/s and their ratio in one run, in headless Chromium on its WebGPU adapter.
import { parseArgs } from 'node:util';
import type { GroupedGemmBenchReport } from '../../src/bench/grouped-gemm-bench.ts';
import { runInBrowser } from '../device/browser-run.ts';

const { values } = parseArgs({
  options: {
    json: { type: 'boolean', default: false },
    rounds: { type: 'string', default: '7' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log('usage: npm run bench:grouped-gemm -- [--json] [--rounds N]   (N ≥ 3 rounds, median reported)');
  process.exit(0);
}
const rounds = Number(values.rounds);
if (!Number.isInteger(rounds) || rounds < 3) {
  console.error(
    `bench:grouped-gemm: --rounds must be an integer ≥ 3 (the median is reported); got "${values.rounds}".`,
  );
  process.exit(2);
}
const report = await runInBrowser<GroupedGemmBenchReport>(
  '/src/bench/grouped-gemm-bench.ts',
  'runGroupedGemmBench',
  { rounds },
  {
    onProgress: (l) => process.stderr.write(`${l}\n`),
  },
);
if (values.json) console.log(JSON.stringify({ host: 'headless Chromium', ...report }, null, 2));
else {
  console.log(`MoE grouped GEMM benchmark on ${report.adapter} (headless Chromium)`);
  console.log(report.note);
  console.log(
    `${'case'.padEnd(22)}${'E'.padStart(4)}${'N'.padStart(6)}${'K'.padStart(5)}${'Nc'.padStart(5)}  rows per expert (min–max)  ${'grouped'.padStart(8)}${'separate'.padStart(9)}${'ratio'.padStart(7)}  GFLOP/s, median of ${rounds}`,
  );
  for (const r of report.rows) {
    const N = r.counts.reduce((a, b) => a + b, 0);
    console.log(
      `${r.name.padEnd(22)}${String(r.counts.length).padStart(4)}${String(N).padStart(6)}${String(r.K).padStart(5)}${String(r.Nc).padStart(5)}  ${`${Math.min(...r.counts)}–${Math.max(...r.counts)}`.padEnd(25)}  ${r.groupedGflops.toFixed(2).padStart(8)}${r.separateGflops.toFixed(2).padStart(9)}${r.ratio.toFixed(2).padStart(7)}`,
    );
  }
}
process.exit(0);
