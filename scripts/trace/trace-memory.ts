// `npm run trace -- --memory SNAPSHOT.json [--job DIR]`: a rank's allocator history (the job bundle's
// memory_snapshot_json.py output) summarised, and with the job's manifest set beside the projection.
import { readFile } from 'node:fs/promises';
import { formatBytes } from '../../src/core/format.ts';
import { TraceImportError } from '../../src/kineto/kineto-read.ts';
import { loadSnapshot, type LoadedSnapshot } from '../../src/kineto/memory-snapshot.ts';
import type { JobManifest } from '../../src/megatron/job-manifest.ts';
import { jobMemoryVsProjected, type MemoryVsProjected } from '../../src/projection/studies/memory-vs-projected.ts';
import { alignedTable } from '../cli/text-table.ts';

/** The snapshot at `path`. */
async function readSnapshotAt(path: string): Promise<LoadedSnapshot> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(path, 'utf8'));
  } catch (e) {
    throw new TraceImportError(
      `${path}: cannot be read as JSON (${(e as Error).message}); convert the snapshot pickle with the bundle's memory_snapshot_json.py first.`,
    );
  }
  return loadSnapshot(json, path);
}

/** Lines of text: the history's levels, and with a manifest the predicted-vs-measured table. */
export async function memoryReport(path: string, manifest: JobManifest | undefined): Promise<string[]> {
  const snapshot = await readSnapshotAt(path);
  const { rank, history: h } = snapshot;
  const span = h.timed ? `${(h.at.at(-1) ?? 0).toFixed(1)} ms` : `${h.at.length} events (no times in this snapshot)`;
  const out = [
    `memory snapshot ${path}${rank !== undefined ? ` (rank ${rank})` : ''}: ${h.allocated.length} allocator events over ${span}, device ${h.device}`,
    `  peak allocated ${formatBytes(h.peakAllocated)}, peak reserved ${formatBytes(h.peakReserved)}; at the start of the history ${formatBytes(h.startAllocated)} allocated, ${formatBytes(h.startReserved)} reserved`,
  ];
  if (!manifest) return [...out, '  (give --job DIR to set it beside the projection of the job it came from)'];
  let c: MemoryVsProjected;
  try {
    c = await jobMemoryVsProjected(snapshot, manifest);
  } catch (e) {
    throw new TraceImportError((e as Error).message);
  }
  const b = (x: number | undefined): string => (x === undefined ? '—' : formatBytes(x));
  const rows = c.lines.map((l) => [l.what, b(l.predictedBytes), b(l.measuredBytes), l.note ?? '']);
  return [
    ...out,
    '',
    `job ${manifest.name}: rank ${c.rank} holds pipeline stage ${c.stage}; measured peak allocated / projected peak = ${c.ratio.toFixed(2)}×`,
    ...alignedTable(['', 'projected', 'measured', ''], rows),
  ];
}
