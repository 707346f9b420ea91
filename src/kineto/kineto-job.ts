// Puts the per-rank files of one job together: rank numbers, one clock, what was left out.
import { TraceImportError, type FileRead } from './kineto-read.ts';
import type { GpuSlice, MeasuredTrace, RankTrace } from './kineto-types.ts';

/**
 * The job of `reads` (one file per rank, in the order given). Ranks come from
 * `distributedInfo.rank` when every file has one, else from the file order (said in the notes).
 * Clocks: Kineto writes ts in µs since `baseTimeNanoseconds`, a wall-clock instant rounded down to
 * a 3-month boundary (output_json.h, ChromeTraceBaseTime) — the same on every rank, so events of
 * different ranks compare directly (up to the hosts' clock sync); differing bases are corrected.
 * Times become ms with 0 at the earliest kept GPU event of all files.
 * Throws TraceImportError for no files or two files of the same rank.
 */
export function assembleJob(reads: readonly FileRead[]): MeasuredTrace {
  if (!reads.length) throw new TraceImportError('no trace files: give one PyTorch profiler trace per rank.');
  const notes: string[] = [];
  const fromDist = reads.every((r) => r.dist?.rank !== undefined);
  if (!fromDist) {
    const without = reads.filter((r) => r.dist?.rank === undefined).map((r) => r.file);
    notes.push(
      `ranks follow the file order (${reads.map((r, i) => `${r.file} → ${i}`).join(', ')}) because ${without.join(', ')} ${without.length > 1 ? 'have' : 'has'} no distributedInfo.rank.`,
    );
  }
  const rankOf = (r: FileRead, i: number): number => (fromDist ? r.dist!.rank! : i);
  const seen = new Map<number, string>();
  reads.forEach((r, i) => {
    const rank = rankOf(r, i);
    const other = seen.get(rank);
    if (other !== undefined)
      throw new TraceImportError(
        `${other} and ${r.file} both record rank ${rank}: give one file per rank (the same rank twice, or files of different jobs).`,
      );
    seen.set(rank, r.file);
  });
  const worlds = [...new Set(reads.map((r) => r.dist?.worldSize).filter((w): w is number => w !== undefined))];
  if (worlds.length > 1)
    notes.push(`the files record different world sizes (${worlds.join(', ')}): are they from one job?`);
  else if (worlds[0] !== undefined && worlds[0] > reads.length)
    notes.push(`${reads.length} of the job's ${worlds[0]} ranks loaded: the analysis covers these only.`);
  const bases = reads.map((r) => r.baseNs);
  const allBased = bases.every((b): b is bigint => b !== null);
  if (!allBased && bases.some((b) => b !== null))
    notes.push('some files have baseTimeNanoseconds and some not: their clocks are compared as written.');
  const minBase = allBased ? bases.reduce((a, b) => (b < a ? b : a)) : 0n;
  const shiftUs = reads.map((r) => (allBased ? Number(r.baseNs! - minBase) / 1000 : 0));
  let originUs = Infinity;
  reads.forEach((r, i) => {
    for (const s of r.slices) originUs = Math.min(originUs, s.t0 + shiftUs[i]!);
  });
  const ranks: RankTrace[] = reads.map((r, i) => {
    const rank = rankOf(r, i);
    const ms = (us: number): number => (us + shiftUs[i]! - originUs) / 1000;
    for (const s of r.slices) {
      s.rank = rank;
      s.t0 = ms(s.t0);
      s.t1 = ms(s.t1);
    }
    r.slices.sort((a, b) => a.t0 - b.t0);
    const devices = [...new Set(r.slices.map((s) => s.device))].sort((a, b) => a - b);
    const fileNotes = [...r.notes];
    if (devices.length > 1)
      fileNotes.push(`kernels ran on devices ${devices.join(', ')}: they are analysed together as rank ${rank}.`);
    const { dropped, ...counts } = r.stats;
    return {
      file: r.file,
      rank,
      rankSource: fromDist ? 'distributedInfo' : 'file order',
      ...(r.dist?.worldSize !== undefined && { worldSize: r.dist.worldSize }),
      ...(r.dist?.backend !== undefined && { backend: r.dist.backend }),
      groups: r.dist?.groups ?? [],
      deviceNames: devices.map((d) => r.deviceNames.get(d)).filter((n): n is string => n !== undefined),
      slices: r.slices as readonly GpuSlice[],
      steps: r.steps.map((s) => ({ ...s, t0: ms(s.t0), t1: ms(s.t1) })),
      stats: { ...counts, kept: r.slices.length, dropped },
      notes: fileNotes,
    };
  });
  ranks.sort((a, b) => a.rank - b.rank);
  return { ranks, notes };
}
