// npm run bench:p2p [-- --sizes 64K,1M,4M] [-- --transport sab-ring,message-port] [-- --iters N] [-- --json]
// One message between two rank workers (half a ping-pong round trip) on host arrays and on GPU
// tensors (read back → moved → uploaded): what a pipeline stage boundary costs here.
import { parseArgs } from 'node:util';
import type { P2PBenchReport } from './bench-p2p-page.ts';

const usage =
  'usage: npm run bench:p2p -- [--sizes 64K,1M,4M] [--transport sab-ring,message-port] [--iters N] [--json]';

function fail(message: string): never {
  process.stderr.write(`bench:p2p: ${message}\n${usage}\n`);
  process.exit(2);
}

let values: { sizes?: string; transport?: string; iters?: string; json?: boolean; help?: boolean };
try {
  values = parseArgs({
    options: {
      sizes: { type: 'string' },
      transport: { type: 'string' },
      iters: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  }).values;
} catch (e) {
  fail((e as Error).message);
}
if (values.help) {
  console.log(usage);
  process.exit(0);
}
const sizeOf = (s: string): number => {
  const m = /^(\d+)([KM]?)$/i.exec(s.trim());
  if (!m) fail(`cannot read size "${s}"; write e.g. 64K, 1M.`);
  const b = Number(m[1]) * { '': 1, K: 1 << 10, M: 1 << 20 }[m[2]!.toUpperCase() as '' | 'K' | 'M'];
  if (b % 4 !== 0 || b === 0) fail(`size "${s}" must be a positive multiple of 4 bytes (float32).`);
  return b;
};
const sizes = (values.sizes ?? '64K,1M,4M').split(',').map(sizeOf);
const transports = (values.transport ?? 'sab-ring,message-port').split(',').map((t) => {
  if (t !== 'sab-ring' && t !== 'message-port') fail(`--transport takes sab-ring, message-port; got "${t}".`);
  return t;
});
const iters = Number(values.iters ?? '20');
if (!(Number.isInteger(iters) && iters >= 1)) fail(`--iters takes a whole number ≥ 1, got "${values.iters}".`);

const { runInBrowser } = await import('../device/browser-run.ts');
const report = await runInBrowser<P2PBenchReport>(
  '/scripts/bench/bench-p2p-page.ts',
  'runP2PBench',
  { sizes, transports, iters },
  { onProgress: (line) => process.stderr.write(`${line}\n`) },
);
if (values.json) console.log(JSON.stringify(report, null, 2));
else {
  console.log(
    `p2p between two rank workers on ${report.adapter} (${report.hardwareConcurrency} hardware threads): one message = half a ping-pong round trip, ${iters} round trips after 3 untimed; gpu = a GPU tensor read back, moved, uploaded into a new tensor.`,
  );
  console.log(
    `${'transport'.padEnd(14)}${'device'.padEnd(8)}${'size'.padStart(8)}${'median ms'.padStart(11)}${'range ms'.padStart(18)}${'GB/s'.padStart(8)}`,
  );
  for (const r of report.rows)
    console.log(
      `${r.transport.padEnd(14)}${r.device.padEnd(8)}${`${r.bytes >= 1 << 20 ? `${r.bytes / (1 << 20)} MiB` : `${r.bytes / 1024} KiB`}`.padStart(8)}${r.medianMs.toFixed(3).padStart(11)}${`${r.minMs.toFixed(3)}–${r.maxMs.toFixed(3)}`.padStart(18)}${r.gbPerS.toFixed(2).padStart(8)}`,
    );
}
process.exit(0);
