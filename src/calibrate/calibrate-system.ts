// A catalog (or file) system refitted to the user's measurements: nccl-tests runs give α and B per
// collective and group size, on the intra-node link or the network; the GEMM sweep gives the time
// of each GEMM shape the projection prices.
import type { FittedCollective, MeasuredGemm } from '../hardware/calibrated-rates.ts';
import type { SystemSpec } from '../hardware/systems.ts';
import { fitCollective, fitResiduals, runPlacement, type FitResidual, type RunPlacement } from './collective-fit.ts';
import type { SweepRow } from './gemm-sweep.ts';
import type { NcclTestRun } from './nccl-tests-parse.ts';

/** One parsed nccl-tests run and the file it came from. */
export interface SourcedRun {
  readonly run: NcclTestRun;
  readonly source: string;
}

/**
 * Below this largest size a run measures latency more than bandwidth: NCCL's bus bandwidth keeps
 * rising into the hundreds of MB (nccl-tests#212: "256M is too small to reach peak bandwidth").
 */
const bandwidthBytes = 64 * 2 ** 20;

/** A fit, where it went (intra-node link or network), the placement it was measured on, and its sizes. */
export interface PlacedFit {
  readonly scope: 'intra' | 'inter';
  readonly placement: RunPlacement;
  readonly fit: FittedCollective;
  readonly residuals: readonly FitResidual[];
}

/** The calibrated system, its fits, and what was left out or assumed (one line each). */
export interface Calibration {
  readonly system: SystemSpec;
  readonly fits: readonly PlacedFit[];
  readonly gemms: readonly MeasuredGemm[];
  readonly notes: readonly string[];
}

/**
 * `base` with the measurements in: each nccl-tests run with a known group size is fitted
 * (collective-fit.ts) and goes to `intra.fitted` when all its ranks share a node, else to
 * `inter.fitted`; runs of one collective on the same group size and scope are fitted together.
 * GEMM rows become `measuredGemms` (a shape timed twice keeps the faster: the sweep's best). The
 * name gets "+calibrated", the source names the files. Runs that cannot be fitted are notes,
 * not errors, so one bad file does not stop the rest; the caller stops when nothing was fitted.
 */
export function calibrateSystem(
  base: SystemSpec,
  runs: readonly SourcedRun[],
  sweep: readonly SweepRow[],
): Calibration {
  const notes: string[] = [];
  const groups = new Map<string, { scope: 'intra' | 'inter'; placement: RunPlacement; runs: SourcedRun[] }>();
  for (const r of runs) {
    const { run, source } = r;
    if (run.ranks === undefined) {
      notes.push(
        `${source}: ${run.op} left out: the paste does not say how many ranks ran it (keep the "# Rank … on HOST" lines, or the command with -np and -g).`,
      );
      continue;
    }
    const placement = runPlacement(run, run.ranks, base.gpusPerNode);
    if (run.hosts.length !== run.ranks)
      notes.push(
        `${source}: no host per rank in the paste: ${placement.nodes === 1 ? 'one node assumed' : `${placement.nodes} nodes of ${placement.ranksPerNode} assumed`} (${base.gpusPerNode} GPUs per node).`,
      );
    const scope = placement.nodes === 1 ? 'intra' : 'inter';
    const key = `${scope}:${run.op}:${run.ranks}:${placement.ranksPerNode}`;
    const g = groups.get(key) ?? { scope, placement, runs: [] };
    g.runs.push(r);
    groups.set(key, g);
  }
  const fits: PlacedFit[] = [];
  for (const g of groups.values()) {
    const first = g.runs[0]!.run;
    const merged: NcclTestRun = { ...first, rows: g.runs.flatMap((r) => r.run.rows) };
    const source = g.runs.map((r) => r.source).join(' + ');
    try {
      const fit = fitCollective(merged, g.placement, base.collectiveBaseUs, source);
      const largest = Math.max(...merged.rows.map((r) => r.bytes));
      if (largest < bandwidthBytes)
        notes.push(
          `${source}: ${fit.op} measured up to ${largest} B only: B (${fit.busGBps.toFixed(1)} GB/s) is a small-message figure, not the link's; run up to -e 8G.`,
        );
      fits.push({
        scope: g.scope,
        placement: g.placement,
        fit,
        residuals: fitResiduals(merged, fit, base.collectiveBaseUs),
      });
    } catch (e) {
      notes.push((e as Error).message);
    }
  }
  const byShape = new Map<string, MeasuredGemm>();
  for (const s of sweep) {
    const key = `${s.M},${s.N},${s.K},${s.batch},${s.precision}`;
    const prev = byShape.get(key);
    if (!prev || s.us < prev.us)
      byShape.set(key, { M: s.M, N: s.N, K: s.K, batch: s.batch, precision: s.precision, us: s.us });
  }
  const gemms = [...byShape.values()];
  const devices = [...new Set(sweep.map((s) => s.device).filter(Boolean))];
  if (devices.length && !devices.some((d) => d.toUpperCase().includes(base.gpu.label.split(' ')[0]!.toUpperCase())))
    notes.push(`the GEMM sweep ran on ${devices.join(', ')}; the system's GPU is ${base.gpu.label}.`);
  const intraFits = fits.filter((f) => f.scope === 'intra').map((f) => f.fit);
  const interFits = fits.filter((f) => f.scope === 'inter').map((f) => f.fit);
  const files = [...new Set([...runs.map((r) => r.source), ...(sweep.length ? ['the GEMM sweep'] : [])])];
  const system: SystemSpec = {
    ...base,
    name: `${base.name}+calibrated`,
    label: `${base.label}, calibrated`,
    intra: intraFits.length ? { ...base.intra, fitted: [...(base.intra.fitted ?? []), ...intraFits] } : base.intra,
    inter: interFits.length ? { ...base.inter, fitted: [...(base.inter.fitted ?? []), ...interFits] } : base.inter,
    source: `${base.source}; calibrated from ${files.join(', ')}`,
    ...(gemms.length || base.measuredGemms ? { measuredGemms: [...(base.measuredGemms ?? []), ...gemms] } : {}),
  };
  return { system, fits, gemms, notes };
}
