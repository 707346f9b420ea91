// `npm run project -- --ablate --tp T`: the overlap ablation of one layout, printed or as JSON.
import { modelSizesText } from './model-sizes-text.ts';
import type { ProjectArgs } from './project-args.ts';
import { alignedTable } from '../cli/text-table.ts';
import { ablateOverlaps, type AblationRow } from '../../src/projection/studies/overlap-ablation.ts';
import { combinationLabel, overlapFlagInfo } from '../../src/projection/layer/overlap-flags.ts';
import { describeSharing } from '../../src/projection/links/shared-link-label.ts';
import { formatBytes, formatMs, formatSignedMs } from '../../src/core/format.ts';

/** The table's cells of one row. */
function cells(r: AblationRow, all: number): string[] {
  const label = r.flags.length === all && all > 2 ? `all ${all} on` : combinationLabel(r.flags);
  if (!r.result.ok) return [label, `not launched: ${r.result.reason}`];
  const x = r.result;
  const e = x.exposedByGroup;
  return [
    label,
    formatMs(x.stepMs),
    r.flags.length ? formatSignedMs(x.vsBaselineMs) : '—',
    formatMs(e.tp),
    formatMs(e.cp),
    formatMs(e.dp),
    formatMs(e.pp),
    formatMs(x.overlapCostMs.dp + x.overlapCostMs.pp),
    formatBytes(x.inFlightBytes),
    `${formatBytes(x.peakBytes)}${x.oom ? ' OOM' : ''}`,
    x.interactionMs !== undefined ? formatSignedMs(x.interactionMs) : '',
    x.worseThanBestSubset && x.bestSubset
      ? `worse than ${combinationLabel(x.bestSubset.flags)}${x.sharedLinkCause ? ' (shared link)' : ''}`
      : '',
  ];
}

/** Runs the ablation for `args` (one --tp) and prints it (stdout), or exits 2 saying what to change. */
export async function runAblation(args: ProjectArgs): Promise<void> {
  if (args.degrees.length !== 1) {
    process.stderr.write(
      `project: --ablate projects one layout: give one --tp degree (e.g. --tp ${args.degrees.at(-1)}).\n`,
    );
    process.exit(2);
  }
  const machine = { system: args.system, dtype: args.dtype, kernels: args.kernels };
  const setup = { ...args.setup, tp: args.degrees[0]! };
  let a: Awaited<ReturnType<typeof ablateOverlaps>>;
  try {
    a = await ablateOverlaps(setup, machine);
  } catch (e) {
    process.stderr.write(`project: ${(e as Error).message}\n`);
    process.exit(2);
  }
  if (args.json) {
    console.log(
      JSON.stringify(
        {
          system: args.system.name,
          dtype: args.dtype,
          setup,
          kernels: args.kernels,
          note: 'projection from datasheet figures and the alpha-beta link model, not a measurement',
          ...a,
        },
        null,
        2,
      ),
    );
    return;
  }
  const { sizes, layers, gpus, globalBatch } = setup;
  console.log(`${args.system.label} · ${args.dtype} · overlap ablation over the projection (not a measurement)`);
  console.log(
    `model: ${modelSizesText(sizes)}, ${layers} layers; ` +
      `${gpus} GPUs, t ${setup.tp}, p ${setup.pp ?? 1}, v ${setup.vpp ?? 1}, cp ${setup.cp ?? 1}${setup.sp ? ', SP' : ''}` +
      `${setup.distributedOptimizer ? ', distributed optimizer' : ''}, global batch ${globalBatch}`,
  );
  for (const f of a.applicable)
    console.log(`  ${overlapFlagInfo[f].short.padEnd(12)} ${overlapFlagInfo[f].megatron}: ${overlapFlagInfo[f].hides}`);
  for (const s of a.notApplicable)
    console.log(`  ${overlapFlagInfo[s.flag].short.padEnd(12)} not applicable: ${s.reason}`);
  const head = [
    'overlaps on',
    'step',
    'vs none',
    'exp TP',
    'exp CP',
    'exp DP',
    'exp PP',
    'cost',
    'in flight',
    'peak mem',
    'pair inter.',
    'flag',
  ];
  const ok = a.rows.filter((r) => r.result.ok);
  for (const line of alignedTable(
    head,
    ok.map((r) => cells(r, a.applicable.length)),
  ))
    console.log(line);
  for (const r of a.rows) if (!r.result.ok) console.log(cells(r, a.applicable.length).join(': '));
  for (const r of a.rows)
    if (r.result.ok && r.result.sharedLinkCause)
      for (const c of r.result.sharedLinkCause)
        console.log(`${cells(r, a.applicable.length)[0]}: shared link: ${describeSharing(c, formatMs)}`);
  console.log(
    `fastest of all ${2 ** a.applicable.length} subsets: ${combinationLabel(a.best.flags)} at ${formatMs(a.best.stepMs)}; ` +
      `${a.flagged} combination${a.flagged === 1 ? '' : 's'} slower than a subset of ${a.flagged === 1 ? 'itself' : 'themselves'}` +
      ` (${a.flaggedForSharedLink} because of a shared link).`,
  );
  console.log(
    "exp: exposed communication per group; cost: compute lost to DP and PP communication beside it (the TP overlaps' cost is in the layer's kernels); in flight: memory the overlaps hold.",
  );
}
