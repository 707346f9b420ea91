// npm run trace -- FILE|DIR… [--job DIR] [--json]
// npm run trace -- --memory SNAPSHOT.json [--job DIR]
// npm run trace -- FILE|DIR… [--job DIR] --what-if t=2,p=2 [--what-if …]
// Reads the per-rank PyTorch profiler (Kineto) traces of one job (.json or .json.gz; a directory
// stands for its trace files) and prints, per rank, compute, communication, exposed communication
// and overlap; per collective and per ProfilerStep#N. With a job bundle's manifest (--job DIR, or a
// megatron-job.json in a directory given) it also prints measured vs projected, and with --what-if
// the job's own rates and other layouts projected on them (docs/what-if.md). Bad input exits 2
// with the reason.
import { parseArgs } from 'node:util';
import { assembleJob } from '../../src/kineto/kineto-job.ts';
import { TraceImportError } from '../../src/kineto/kineto-read.ts';
import { analyseMeasured } from '../../src/kineto/measured-analysis.ts';
import { readTraceFile } from './trace-files.ts';
import { jobComparisonReport, readManifestAt, traceFilesOf } from './trace-job.ts';
import { traceReport } from './trace-print.ts';
import { memoryReport } from './trace-memory.ts';
import { whatIfReport } from './trace-what-if.ts';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { jobManifestFile } from '../../src/megatron/job-manifest.ts';
import { exitAfterFlush } from '../cli/exit-after-flush.ts';

const usage = [
  'usage: npm run trace -- FILE|DIR… [--job DIR] [--json]   (one PyTorch profiler trace per rank, .json or .json.gz; --job: a job bundle or its megatron-job.json)',
  "       npm run trace -- --memory SNAPSHOT.json [--job DIR]   (a memory snapshot as the bundle's memory_snapshot_json.py writes it)",
  '       npm run trace -- FILE|DIR… [--job DIR] --what-if t=2,p=2,v=2,cp=1,mb=2,gpus=16,sp=on,recompute=full,dist-opt=on,overlap-grad=on,overlap-param=on [--what-if …]   (other layouts on the job’s own rates; any subset of the keys)',
].join('\n');

function fail(message: string): never {
  process.stderr.write(`trace: ${message}\n${usage}\n`);
  process.exit(2);
}

let args: ReturnType<
  typeof parseArgs<{
    options: {
      json: { type: 'boolean' };
      help: { type: 'boolean' };
      job: { type: 'string' };
      memory: { type: 'string' };
      'what-if': { type: 'string'; multiple: true };
    };
    allowPositionals: true;
  }>
>;
try {
  args = parseArgs({
    options: {
      json: { type: 'boolean' },
      help: { type: 'boolean' },
      job: { type: 'string' },
      memory: { type: 'string' },
      'what-if': { type: 'string', multiple: true },
    },
    allowPositionals: true,
  });
} catch (e) {
  fail(e instanceof Error ? e.message : String(e));
}
if (args.values.help) {
  console.log(usage);
  await exitAfterFlush(0);
}
if (args.values.memory !== undefined) {
  try {
    const job = args.values.job !== undefined ? await readManifestAt(args.values.job) : undefined;
    console.log((await memoryReport(args.values.memory, job)).join('\n'));
  } catch (e) {
    if (e instanceof TraceImportError) fail(e.message);
    throw e;
  }
  await exitAfterFlush(0);
}
if (!args.positionals.length) fail('no trace files given.');

try {
  const reads = [];
  for (const path of await traceFilesOf(args.positionals)) reads.push(await readTraceFile(path));
  const trace = assembleJob(reads);
  const analysis = analyseMeasured(trace);
  const beside = args.positionals.map((p) => join(p, jobManifestFile)).find((p) => existsSync(p));
  const jobAt = args.values.job ?? beside;
  const job = jobAt !== undefined ? await readManifestAt(jobAt) : undefined;
  const whatIf = args.values['what-if'];
  if (whatIf && !job)
    fail(
      `--what-if needs the job's manifest: give --job DIR (a job bundle or its ${jobManifestFile}), or keep ${jobManifestFile} beside the traces.`,
    );
  if (whatIf && job) {
    console.log((await whatIfReport(trace, job, whatIf)).join('\n'));
    await exitAfterFlush(0);
  }
  const comparison = job ? await jobComparisonReport(job, analysis) : undefined;
  if (args.values.json) {
    const files = trace.ranks.map(({ slices: _slices, ...meta }) => meta);
    console.log(JSON.stringify({ files, notes: trace.notes, analysis, ...(job && { job }) }, null, 2));
  } else console.log([...traceReport(trace, analysis), ...(comparison ? ['', ...comparison] : [])].join('\n'));
} catch (e) {
  if (e instanceof TraceImportError) fail(e.message);
  throw e;
}
