// Which ProfilerStep#N each GPU slice of one rank belongs to.
import type { GpuSlice, StepMark } from './kineto-types.ts';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
/** A slice while reading: times in µs on the file's clock, the launch's correlation id. */
export type SliceDraft = Mutable<GpuSlice> & { corr?: number };

/** A ProfilerStep#N range as written in the file, µs. */
export interface StepRange {
  readonly step: number;
  readonly t0: number;
  readonly t1: number;
}

/**
 * Step of every slice. GPU-side ProfilerStep#N ranges: the step containing the slice's start.
 * CPU-side ones only: the step containing the launch (cuda_runtime event of the same
 * correlation id), since kernels run after their launch; the slice's own start without one.
 * The marks returned span each step's slices on the GPU.
 */
export function assignSteps(
  slices: SliceDraft[],
  gpuSteps: StepRange[],
  cpuSteps: StepRange[],
  launches: ReadonlyMap<number, number>,
  notes: string[],
): StepMark[] {
  const gpu = gpuSteps.length > 0;
  const ranges = (gpu ? gpuSteps : cpuSteps).sort((a, b) => a.t0 - b.t0);
  if (!ranges.length) return [];
  const find = (t: number): number | undefined => {
    let lo = 0;
    let hi = ranges.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const r = ranges[mid]!;
      if (t < r.t0) hi = mid - 1;
      else if (t >= r.t1) lo = mid + 1;
      else return r.step;
    }
    return undefined;
  };
  let unlinked = 0;
  for (const s of slices) {
    let at = s.t0;
    if (!gpu) {
      const launch = s.corr !== undefined ? launches.get(s.corr) : undefined;
      if (launch === undefined) unlinked++;
      else at = launch;
    }
    const step = find(at);
    if (step !== undefined) s.step = step;
  }
  if (!gpu && unlinked)
    notes.push(`${unlinked} GPU slices have no CUDA launch in the trace: their step is the one their start falls in.`);
  if (gpu) return ranges.map((r) => ({ ...r, source: 'gpu_user_annotation' as const }));
  const spans = new Map<number, { t0: number; t1: number }>();
  for (const s of slices) {
    if (s.step === undefined) continue;
    const x = spans.get(s.step);
    if (x) {
      x.t0 = Math.min(x.t0, s.t0);
      x.t1 = Math.max(x.t1, s.t1);
    } else spans.set(s.step, { t0: s.t0, t1: s.t1 });
  }
  return [...spans].sort((a, b) => a[0] - b[0]).map(([step, x]) => ({ step, ...x, source: 'cpu' as const }));
}
