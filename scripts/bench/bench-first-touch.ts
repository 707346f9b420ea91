// npm run bench:first-touch [-- --sizes 64K,1M,16M] [-- --workers 1,4] [-- --iters N]
// What a collective's new result array costs here: writing n bytes into a new array against one
// reused, in 1 and in 4 workers of one page at once (the ranks), and whether the cost is the
// allocation, the source read or the first touch of the new pages.
import { parseArgs } from 'node:util';
import { runInBrowser } from '../device/browser-run.ts';
import type { FirstTouchRow } from './bench-first-touch-page.ts';
import { median } from '../../src/core/stats.ts';

const { values } = parseArgs({
  options: { sizes: { type: 'string' }, workers: { type: 'string' }, iters: { type: 'string' } },
});
const parseSize = (s: string): number => {
  const m = /^(\d+)([KM]?)$/i.exec(s.trim());
  if (!m) throw new Error(`bench:first-touch: cannot read size "${s}" (use e.g. 64K, 16M).`);
  return Number(m[1]) * { '': 1, K: 1 << 10, M: 1 << 20 }[m[2].toUpperCase() as '' | 'K' | 'M'];
};
const sizes = (values.sizes ?? '64K,1M,16M').split(',').map(parseSize);
const workers = (values.workers ?? '1,4').split(',').map(Number);
const iters = Number(values.iters ?? 8);
for (const b of sizes)
  if (b % 4096 !== 0) throw new Error(`bench:first-touch: sizes must be whole 4 KiB pages, got ${b}.`);
if (!workers.every((w) => Number.isInteger(w) && w >= 1 && w <= 16))
  throw new Error(`bench:first-touch: --workers takes counts from 1 to 16, got "${values.workers}".`);
if (!(Number.isInteger(iters) && iters >= 1))
  throw new Error(`bench:first-touch: --iters takes a positive integer, got "${values.iters}".`);

const rows = await runInBrowser<FirstTouchRow[]>(
  '/scripts/bench/bench-first-touch-page.ts',
  'runFirstTouch',
  { sizes, workers, iters },
  {
    onProgress: (line) => process.stderr.write(`${line}\n`),
  },
);
console.log(
  'Median ms per result written, per worker (all workers at once). reused: into one array; fresh: into a new array; fill: a new array filled (no source); alloc: a new array unwritten; kept: as fresh, every result kept alive. µs/page = (fresh − reused) per 4 KiB page.',
);
console.log(
  `${'workers'.padEnd(8)}${'size'.padStart(9)}${['reused', 'fresh', 'fill', 'alloc', 'kept'].map((m) => m.padStart(10)).join('')}${'µs/page'.padStart(10)}`,
);
for (const w of workers)
  for (const b of sizes) {
    const at = (mode: string): number =>
      median(rows.find((r) => r.workers === w && r.bytes === b && r.mode === mode)!.msPerWorker);
    const size = b >= 1 << 20 ? `${b / (1 << 20)} MiB` : `${b / 1024} KiB`;
    const perPage = ((at('fresh') - at('reused')) * 1000) / (b / 4096);
    console.log(
      `${String(w).padEnd(8)}${size.padStart(9)}${['reused', 'fresh', 'fill', 'alloc', 'kept'].map((m) => at(m).toFixed(2).padStart(10)).join('')}${perPage.toFixed(1).padStart(10)}`,
    );
  }
