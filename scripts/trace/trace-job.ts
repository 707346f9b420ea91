// The way back for `npm run trace`: directories expand to their trace files, a job bundle's manifest
// (megatron-job.json) selects the projection, and the comparison prints as a table.
import { alignedTable } from '../cli/text-table.ts';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { TraceImportError } from '../../src/kineto/kineto-read.ts';
import type { MeasuredAnalysis } from '../../src/kineto/measured-analysis.ts';
import { inGroupDim } from '../../src/kineto/process-group.ts';
import {
  jobManifestFile,
  manifestProjection,
  readJobManifest,
  type JobManifest,
} from '../../src/megatron/job-manifest.ts';
import { projectStep } from '../../src/projection/step/cluster-projection.ts';
import { compareWithProjection } from '../../src/projection/studies/measured-vs-projected.ts';
import { formatMs } from '../../src/core/format.ts';
import { layerArchText } from '../../src/megatron/layer-arch.ts';
import { commandMachine } from '../../src/projection/layer/command-machine.ts';

/** Trace files of the arguments: files as given, directories as their *.json / *.json.gz files (the manifest left out), sorted. */
export async function traceFilesOf(paths: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (const p of paths) {
    const st = await stat(p).catch(() => undefined);
    if (!st) throw new TraceImportError(`${p}: no such file or directory.`);
    if (!st.isDirectory()) {
      out.push(p);
      continue;
    }
    const names = (await readdir(p))
      .filter((n) => /\.json(\.gz)?$/.test(n) && n !== jobManifestFile)
      .sort((x, y) => x.localeCompare(y, 'en', { numeric: true }));
    if (!names.length) throw new TraceImportError(`${p}: no .json or .json.gz trace files in this directory.`);
    out.push(...names.map((n) => join(p, n)));
  }
  return out;
}

/** The manifest at `path` (a file, or a directory holding megatron-job.json). */
export async function readManifestAt(path: string): Promise<JobManifest> {
  const file = (await stat(path).catch(() => undefined))?.isDirectory() ? join(path, jobManifestFile) : path;
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    throw new TraceImportError(
      `${file}: cannot be read; --job takes a job bundle's directory or its ${jobManifestFile}.`,
    );
  }
  try {
    return readJobManifest(text, file);
  } catch (e) {
    throw new TraceImportError((e as Error).message);
  }
}

/** Measured vs projected for the job of `manifest`, as lines of text (the first ProfilerStep, else the whole trace). */
export async function jobComparisonReport(manifest: JobManifest, a: MeasuredAnalysis): Promise<string[]> {
  let job: ReturnType<typeof manifestProjection>;
  try {
    job = manifestProjection(manifest);
  } catch (e) {
    throw new TraceImportError(`${manifest.name}: ${(e as Error).message}`);
  }
  const { parsed, system } = job;
  const projection = await projectStep(parsed.setup, commandMachine(parsed, system));
  const step = a.steps[0]?.step;
  const c = compareWithProjection(a, step, projection);
  const ratio = (m: number, p: number): string => (p > 0 ? `${(m / p).toFixed(2)}×` : '—');
  const rows = [
    ...c.rows.map((r) => [r.what, formatMs(r.measuredMs), formatMs(r.projectedMs), ratio(r.measuredMs, r.projectedMs)]),
    ...c.collectives.map((x) => [
      `Σ ${x.collective}${inGroupDim(x.dim)} per GPU`,
      formatMs(x.measuredMs),
      formatMs(x.projectedMs),
      ratio(x.measuredMs, x.projectedMs),
    ]),
  ];
  const head = ['', 'measured', 'projected', 'measured/projected'];
  return [
    `job ${manifest.name} (${manifest.megatron.tag}): projected on ${system.label}, ${parsed.dtype}, ${layerArchText(parsed.flags.layerArch)}, t = ${parsed.setup.tp}${parsed.setup.sp ? ' with SP' : ''}, ${parsed.setup.layers} layers, ${manifest.nodes} × ${manifest.gpusPerNode} GPUs; measured ${step === undefined ? 'the whole trace' : `ProfilerStep#${step}`}`,
    ...alignedTable(head, rows),
  ];
}
