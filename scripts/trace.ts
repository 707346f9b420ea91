// npm run trace -- FILE… [--json]
// Reads the per-rank PyTorch profiler (Kineto) traces of one job (.json or .json.gz) and prints,
// per rank, compute, communication, exposed communication and overlap; per collective and per
// ProfilerStep#N. Bad input exits 2 with the reason.
import { parseArgs } from 'node:util';
import { assembleJob } from '../src/kineto/kineto-job.ts';
import { TraceImportError } from '../src/kineto/kineto-read.ts';
import { analyseMeasured } from '../src/kineto/measured-analysis.ts';
import { readTraceFile } from './trace-files.ts';
import { traceReport } from './trace-print.ts';

const usage = 'usage: npm run trace -- FILE… [--json]   (one PyTorch profiler trace per rank, .json or .json.gz)';

function fail(message: string): never {
  process.stderr.write(`trace: ${message}\n${usage}\n`);
  process.exit(2);
}

let args: ReturnType<
  typeof parseArgs<{ options: { json: { type: 'boolean' }; help: { type: 'boolean' } }; allowPositionals: true }>
>;
try {
  args = parseArgs({ options: { json: { type: 'boolean' }, help: { type: 'boolean' } }, allowPositionals: true });
} catch (e) {
  fail(e instanceof Error ? e.message : String(e));
}
if (args.values.help) {
  console.log(usage);
  process.exit(0);
}
if (!args.positionals.length) fail('no trace files given.');

try {
  const reads = [];
  for (const path of args.positionals) reads.push(await readTraceFile(path));
  const trace = assembleJob(reads);
  const analysis = analyseMeasured(trace);
  if (args.values.json) {
    const files = trace.ranks.map(({ slices: _slices, ...meta }) => meta);
    console.log(JSON.stringify({ files, notes: trace.notes, analysis }, null, 2));
  } else console.log(traceReport(trace, analysis).join('\n'));
} catch (e) {
  if (e instanceof TraceImportError) fail(e.message);
  throw e;
}
