// `npm run trace -- FILE|DIR… --what-if t=2,p=2 [--what-if …]`: the job's own rates from its traces,
// and the layouts asked for projected on them beside the catalog's projection.
import { formatMs } from '../../src/core/format.ts';
import { changedSetup, layoutLabel, parseLayoutChange } from '../../src/calibrate/what-if-layout.ts';
import { classSumRefusal, whatIfFromTrace, type Layout, type WhatIfRow } from '../../src/calibrate/trace-what-if.ts';
import { TraceImportError } from '../../src/kineto/kineto-read.ts';
import type { MeasuredTrace } from '../../src/kineto/kineto-types.ts';
import { manifestProjection, type JobManifest } from '../../src/megatron/job-manifest.ts';
import { alignedTable } from '../cli/text-table.ts';
import { commandKernelOptions } from '../../src/projection/layer/command-machine.ts';

const pct = (x: number): string => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}%`;

/** The what-if as lines of text: the rates, then each layout on the catalog and on the trace's rates. */
export async function whatIfReport(
  trace: MeasuredTrace,
  manifest: JobManifest,
  specs: readonly string[],
): Promise<string[]> {
  let job: Layout;
  let others: Layout[];
  let system: ReturnType<typeof manifestProjection>['system'];
  try {
    const p = manifestProjection(manifest);
    system = p.system;
    job = {
      label: `the job: ${layoutLabel(p.parsed.setup)}`,
      setup: p.parsed.setup,
      dtype: p.parsed.dtype,
      kernels: commandKernelOptions(p.parsed.flags),
    };
    const refusal = classSumRefusal(job);
    if (refusal) throw new Error(refusal);
    others = specs.map((spec) => {
      try {
        const setup = changedSetup(job.setup, parseLayoutChange(spec));
        return { label: `${spec}: ${layoutLabel(setup)}`, setup, dtype: job.dtype, kernels: job.kernels };
      } catch (e) {
        throw new Error(`--what-if ${spec}: ${(e as Error).message}`, { cause: e });
      }
    });
  } catch (e) {
    throw new TraceImportError((e as Error).message);
  }
  const w = await whatIfFromTrace(trace, job, system, others);
  const r = w.rates;
  const out = [
    `what-if from job ${manifest.name}'s trace (${r.step === undefined ? 'the whole trace' : `ProfilerStep#${r.step}`}, rank ${r.rank}, step ${formatMs(r.measuredStepMs)}) on ${system.label}`,
    ...alignedTable(
      ['kernel class, Σ per step', 'measured', 'model', 'measured/model'],
      r.classes.map((c) => [c.cls, formatMs(c.measuredMs), formatMs(c.modelMs), `${c.scale.toFixed(3)}×`]),
    ),
    ...alignedTable(
      ['link', 'α', 'B', 'fitted', 'from', 'worst'],
      r.links.map((l) => [
        l.scope === 'intra' ? 'node' : `network (${l.ranksPerNode} per node)`,
        `${l.alphaUs.toFixed(2)} µs`,
        `${l.busGBps.toFixed(1)} GB/s${l.scope === 'inter' ? ' per NIC' : ''}`,
        l.how,
        `${l.calls} calls, ${l.points} point${l.points > 1 ? 's' : ''} (${l.what})`,
        pct(l.maxRelError),
      ]),
    ),
    ...r.notes.map((n) => `  note: ${n}`),
    '',
  ];
  const row = (x: WhatIfRow): string[] =>
    x.ok
      ? [
          x.layout.label,
          formatMs(x.nominal.stepMs),
          formatMs(x.reprojected.stepMs),
          Math.round(x.reprojected.tokensPerS).toLocaleString('en'),
          `${(100 * x.reprojected.mfu).toFixed(1)}%`,
          `${(x.reprojected.stepMs / (w.job.ok ? w.job.reprojected.stepMs : Number.NaN)).toFixed(2)}×`,
        ]
      : [x.layout.label, '—', '—', '—', '—', x.reason];
  return [
    ...out,
    ...alignedTable(
      ['layout', 'catalog step', 'from the trace', 'tokens/s', 'MFU', 'step vs the job'],
      [row(w.job), ...w.rows.map(row)],
    ),
  ];
}
