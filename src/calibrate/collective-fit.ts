// α–β of the ring model (src/hardware/interconnect.ts) fitted to one nccl-tests run.
import { busFactor } from '../comm/ring-bytes.ts';
import type { FittedCollective, MeasuredCollectiveOp } from '../hardware/calibrated-rates.ts';
import type { NcclTestRun } from './nccl-tests-parse.ts';

/**
 * The model's terms per collective on t ranks: T(S) = base + steps·α + S·f/B (interconnect.ts
 * collectiveTimeUs; nccl-tests doc/PERFORMANCE.md gives the same f as its bus-bandwidth factor, so
 * B is a bus bandwidth). All-to-all is not a ring op of the model: its (t−1) steps and (t−1)/t are
 * nccl-tests' bus factor, stored for reading, not priced.
 */
export function ringTerms(op: MeasuredCollectiveOp, t: number): { readonly steps: number; readonly factor: number } {
  switch (op) {
    case 'allReduce':
      return { steps: 2 * (t - 1), factor: busFactor(op, t) };
    case 'allGather':
    case 'reduceScatter':
    case 'broadcast':
      return { steps: t - 1, factor: busFactor(op, t) };
    case 'allToAll':
      return { steps: t - 1, factor: busFactor('allGather', t) };
    case 'sendRecv':
      return { steps: 1, factor: busFactor('ringExchange', t) };
  }
}

/** One measured point: S bytes, T µs (out-of-place). */
export interface FitPoint {
  readonly bytes: number;
  readonly timeUs: number;
}

/** The fit's line T = a + c·S and how far it is from the points. */
export interface LineFit {
  readonly interceptUs: number;
  readonly usPerByte: number;
  readonly maxRelError: number;
}

/**
 * The line T = a + c·S minimising Σ((a + c·S − T)/T)²: relative error, so the µs of the small
 * messages (latency) weigh as much as the ms of the large ones (bandwidth). Weighted least
 * squares with w = 1/T²; normal equations [Σw Σw·S; Σw·S Σw·S²]·[a c] = [Σw·T Σw·S·T].
 * Needs two distinct sizes.
 */
export function fitLine(points: readonly FitPoint[]): LineFit {
  let sw = 0;
  let sx = 0;
  let sxx = 0;
  let sy = 0;
  let sxy = 0;
  for (const { bytes: x, timeUs: y } of points) {
    const w = 1 / (y * y);
    sw += w;
    sx += w * x;
    sxx += w * x * x;
    sy += w * y;
    sxy += w * x * y;
  }
  const det = sw * sxx - sx * sx;
  const c = (sw * sxy - sx * sy) / det;
  const a = (sy - c * sx) / sw;
  const maxRelError = Math.max(...points.map((p) => Math.abs(a + c * p.bytes - p.timeUs) / p.timeUs));
  return { interceptUs: a, usPerByte: c, maxRelError };
}

/** Where a run was measured: its ranks and how many of them shared a node. */
export interface RunPlacement {
  readonly ranks: number;
  readonly ranksPerNode: number;
  readonly nodes: number;
}

/**
 * The run's placement from its Rank lines' host names; without them, one node when the ranks fit
 * in `gpusPerNode`, else ranks spread evenly over ⌈ranks/gpusPerNode⌉ nodes (an assumption the
 * caller reports).
 */
export function runPlacement(run: NcclTestRun, ranks: number, gpusPerNode: number): RunPlacement {
  if (run.hosts.length === ranks) {
    const per = new Map<string, number>();
    for (const h of run.hosts) per.set(h, (per.get(h) ?? 0) + 1);
    return { ranks, nodes: per.size, ranksPerNode: Math.max(...per.values()) };
  }
  const nodes = Math.ceil(ranks / gpusPerNode);
  return { ranks, nodes, ranksPerNode: Math.ceil(ranks / nodes) };
}

/**
 * α and B of the ring model for `run` (out-of-place times, zero-byte rows left out):
 * B = f/(c·1e3) GB/s from the slope c (µs per byte), α = (a − base)/steps from the intercept a,
 * clamped at 0 where the measured fixed cost is below the system's NCCL base latency (the model
 * cannot go below base; `maxRelError` then says how much the small sizes are overpriced).
 * Throws when the run has fewer than two sizes or a slope that is not positive.
 */
export function fitCollective(
  run: NcclTestRun,
  placement: RunPlacement,
  baseUs: number,
  source: string,
): FittedCollective {
  const t = placement.ranks;
  if (t < 2)
    throw new Error(`${source}: ${run.op} on ${t} rank: a collective needs 2 ranks or more to measure a link.`);
  const points = run.rows.filter((r) => r.bytes > 0).map((r) => ({ bytes: r.bytes, timeUs: r.outOfPlace.timeUs }));
  if (new Set(points.map((p) => p.bytes)).size < 2)
    throw new Error(
      `${source}: ${run.op} has ${points.length} non-empty size(s): the fit needs two sizes or more (run with -b 8 -e 8G -f 2).`,
    );
  const line = fitLine(points);
  if (!(line.usPerByte > 0))
    throw new Error(
      `${source}: ${run.op}'s time does not grow with the size over ${points[0]!.bytes}–${points.at(-1)!.bytes} B: measure up to larger sizes (-e 8G).`,
    );
  const { steps, factor } = ringTerms(run.op, t);
  const alphaUs = Math.max(0, (line.interceptUs - baseUs) / steps);
  const busGBps = factor / (line.usPerByte * 1e3);
  // The model's own error on the points, with α clamped.
  const terms = { op: run.op, ranks: t, alphaUs, busGBps };
  const maxRelError = Math.max(
    ...points.map((p) => Math.abs(fittedTimeUs(terms, p.bytes, baseUs) - p.timeUs) / p.timeUs),
  );
  return {
    op: run.op,
    ranks: t,
    ranksPerNode: placement.ranksPerNode,
    alphaUs,
    busGBps,
    points: points.length,
    maxRelError,
    source,
  };
}

/** One measured size against the fit: nccl-tests' bus bandwidth and the model's, GB/s. */
export interface FitResidual {
  readonly bytes: number;
  readonly measuredBusGBps: number;
  readonly modelBusGBps: number;
}

/**
 * Bus bandwidth per size, measured and modelled: busbw = S/T·f (nccl-tests doc/PERFORMANCE.md)
 * with T the measured out-of-place time, or the model's base + steps·α + S·f/B.
 */
export function fitResiduals(run: NcclTestRun, fit: FittedCollective, baseUs: number): FitResidual[] {
  const { factor } = ringTerms(fit.op, fit.ranks);
  const busbw = (bytes: number, us: number): number => (bytes / (us * 1e3)) * factor;
  return run.rows
    .filter((r) => r.bytes > 0)
    .map((r) => ({
      bytes: r.bytes,
      measuredBusGBps: busbw(r.bytes, r.outOfPlace.timeUs),
      modelBusGBps: busbw(r.bytes, fittedTimeUs(fit, r.bytes, baseUs)),
    }));
}

/** The fit's time for S bytes, µs: base + steps·α + S·f/B (the ring model with the fit's α and B). */
export function fittedTimeUs(
  fit: Pick<FittedCollective, 'op' | 'ranks' | 'alphaUs' | 'busGBps'>,
  bytes: number,
  baseUs: number,
): number {
  const { steps, factor } = ringTerms(fit.op, fit.ranks);
  return baseUs + steps * fit.alphaUs + (bytes * factor) / (fit.busGBps * 1e3);
}
