// npm run project -- [setup flags] --calibrate DIR: fits the system to DIR's nccl-tests outputs and
// GEMM sweep, writes DIR/calibrated-system.json, prints the fits and the projection before and after.
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { calibrateSystem, type Calibration, type SourcedRun } from '../../src/calibrate/calibrate-system.ts';
import { gemmSweepFile, parseGemmSweep, type SweepRow } from '../../src/calibrate/gemm-sweep.ts';
import { sweepShapes } from '../../src/calibrate/gemm-shapes.ts';
import { opFromFileName, parseNcclTests } from '../../src/calibrate/nccl-tests-parse.ts';
import { calibratedSystemFile, systemFileText } from '../../src/calibrate/system-file.ts';
import { fittedFor, measuredGemmUs } from '../../src/hardware/calibrated-rates.ts';
import { formatBytes, formatMs } from '../../src/core/format.ts';
import { fixedBudget } from '../../src/projection/step/cluster-projection.ts';
import { budgetLines } from '../../src/projection/step/cluster-summary.ts';
import { alignedTable } from '../cli/text-table.ts';
import type { ProjectArgs } from './project-args.ts';

/** Files of DIR read as nccl-tests output. */
const ncclExtensions = /\.(txt|log|out)$/i;

/** The measurements in `dir`: every nccl-tests output and the GEMM sweep. Throws naming the file that does not read. */
export async function readCalibrationDir(dir: string): Promise<{ runs: SourcedRun[]; sweep: SweepRow[] }> {
  let names: string[];
  try {
    names = (await readdir(dir)).sort();
  } catch (e) {
    throw new Error(
      `--calibrate ${dir}: cannot read the directory (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}).`,
      { cause: e },
    );
  }
  const runs: SourcedRun[] = [];
  let sweep: SweepRow[] = [];
  for (const name of names) {
    const path = join(dir, name);
    if (name === gemmSweepFile) sweep = parseGemmSweep(await readFile(path, 'utf8'), name);
    else if (ncclExtensions.test(name)) {
      const op = opFromFileName(name);
      for (const run of parseNcclTests(await readFile(path, 'utf8'), { source: name, ...(op && { op }) }))
        runs.push({ run, source: name });
    }
  }
  if (!runs.length && !sweep.length)
    throw new Error(
      `--calibrate ${dir}: no nccl-tests output (*.txt, *.log, *.out) and no ${gemmSweepFile} in it: put there what all_reduce_perf & co. printed and what the job bundle's gemm_sweep.py wrote.`,
    );
  return { runs, sweep };
}

const num = (x: number, digits = 1): string => x.toFixed(digits);

/** The fits as a table: where, collective, ranks, α, B against the catalog's, and the fit's worst point. */
function fitLines(c: Calibration, base: ProjectArgs['system']): string[] {
  if (!c.fits.length) return ['no collective fitted'];
  const rows = c.fits.map(({ scope, placement, fit }) => {
    const catalog = scope === 'intra' ? base.intra : base.inter;
    const catalogB =
      scope === 'intra'
        ? base.intra.busGBps
        : base.inter.nicGBps * Math.min(placement.ranksPerNode, base.inter.nicsPerNode);
    return [
      fit.source,
      scope === 'intra' ? 'in node' : `${placement.nodes} nodes`,
      fit.op,
      String(fit.ranks),
      num(fit.alphaUs, 2),
      `${num(catalog.alphaUs, 1)}`,
      num(fit.busGBps),
      num(catalogB),
      String(fit.points),
      `${num(100 * fit.maxRelError)}%`,
    ];
  });
  return alignedTable(
    ['file', 'where', 'collective', 'ranks', 'α µs', 'catalog α', 'B GB/s', 'catalog B', 'sizes', 'worst fit'],
    rows,
  );
}

/** Runs the calibration: fits, writes the system file, projects before and after. */
export async function runCalibration(args: ProjectArgs, dir: string): Promise<string[]> {
  const { runs, sweep } = await readCalibrationDir(dir);
  const cal = calibrateSystem(args.system, runs, sweep);
  if (!cal.fits.length && !cal.gemms.length)
    throw new Error(`--calibrate ${dir}: nothing could be fitted:\n  ${cal.notes.join('\n  ')}`);
  const out = join(dir, calibratedSystemFile);
  await writeFile(out, systemFileText(cal.system));
  const before = { system: args.system, dtype: args.dtype, kernels: args.kernels };
  const after = { ...before, system: cal.system };
  const lines: string[] = [`calibrating ${args.system.label} from ${dir}`, ...fitLines(cal, args.system)];
  for (const { fit, residuals } of cal.fits) {
    lines.push(`${fit.source}: ${fit.op} on ${fit.ranks}, bus bandwidth per size (GB/s), measured / fitted:`);
    lines.push(
      `  ${residuals.map((r) => `${formatBytes(r.bytes)} ${num(r.measuredBusGBps)}/${num(r.modelBusGBps)}`).join(', ')}`,
    );
  }
  // GEMMs: how many of the shapes the projection prices at the first t were timed.
  const t0 = args.degrees[0]!;
  const shapes = await sweepShapes({ ...args.setup, tp: t0 }, before);
  const matched = shapes.filter((s) => measuredGemmUs(cal.gemms, s, s.precision) !== undefined).length;
  lines.push(
    `GEMMs: ${cal.gemms.length} shapes timed; ${matched} of the ${shapes.length} the projection prices at t = ${t0} (the others keep the tile model)`,
  );
  for (const n of cal.notes) lines.push(`note: ${n}`);
  lines.push(`system file written: ${out} (use --system file:${out})`);
  const [b, a] = await Promise.all([
    fixedBudget(args.setup, args.degrees, before),
    fixedBudget(args.setup, args.degrees, after),
  ]);
  const lb = budgetLines(b);
  const la = budgetLines(a);
  const rows = lb.map((x, i) => {
    const y = la[i]!;
    if (!x.ok || !y.ok) return [String(x.tp), 'illegal', '', '', '', '', ''];
    return [
      String(x.tp),
      formatMs(x.stepMs),
      formatMs(y.stepMs),
      `${y.stepMs >= x.stepMs ? '+' : ''}${num((100 * (y.stepMs - x.stepMs)) / x.stepMs)}%`,
      Math.round(x.tokensPerS).toLocaleString('en-US'),
      Math.round(y.tokensPerS).toLocaleString('en-US'),
      `${formatMs(x.exposedMs)} → ${formatMs(y.exposedMs)}`,
    ];
  });
  lines.push('projection before → after calibration (not a measurement):');
  lines.push(
    ...alignedTable(
      ['t', 'step before', 'step after', 'change', 'tokens/s before', 'tokens/s after', 'exposed comm'],
      rows,
    ),
  );
  // Which fit prices the TP group's all-reduce at each t (in-node groups only).
  for (const t of args.degrees) {
    const f = t > 1 && t <= cal.system.gpusPerNode ? fittedFor(cal.system.intra.fitted, 'allReduce', t) : undefined;
    if (f) lines.push(`t = ${t}: TP all-reduce priced with the ${f.ranks}-rank fit of ${f.source}`);
  }
  return lines;
}
