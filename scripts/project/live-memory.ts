// npx tsx scripts/project/live-memory.ts [--preset NAME] [--tp T] [--sp]: each rank's buffers over one step, replayed on shapes, against the accounting.
import { parseArgs } from 'node:util';
import { rankMemory } from '../../src/accounting/accounting.ts';
import { accountingChecks, rankLiveMemory } from '../../src/accounting/live-memory.ts';
import { formatBytes } from '../../src/core/format.ts';
import { configFromPreset, presetNames, presets, type PresetName } from '../../src/parallel/config.ts';
import { replayStepMemory } from '../../src/parallel/memory-replay.ts';
import { makePlan } from '../../src/parallel/plan.ts';
import { legalTpDegrees } from '../../src/parallel/validate.ts';
import { alignedTable } from '../cli/text-table.ts';

const usage = 'usage: npx tsx scripts/project/live-memory.ts [--preset NAME] [--tp T] [--sp]';
const { values } = parseArgs({
  options: {
    preset: { type: 'string' },
    tp: { type: 'string' },
    sp: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log(usage);
  process.exit(0);
}
if (values.preset !== undefined && !presetNames.includes(values.preset as PresetName)) {
  console.error(`unknown preset "${values.preset}"; presets are ${presetNames.join(', ')}.\n${usage}`);
  process.exit(2);
}
const tp = values.tp === undefined ? undefined : Number(values.tp);
if (tp !== undefined && !(Number.isInteger(tp) && tp >= 1)) {
  console.error(`--tp must be a positive integer, got "${values.tp}".\n${usage}`);
  process.exit(2);
}

const head = [
  'config',
  'weights',
  'gradients',
  'activations',
  'workspace made',
  'peak',
  'peak at op',
  'accounting 2P + A',
  'equal',
];
const rows: string[][] = [];
for (const preset of values.preset ? [values.preset as PresetName] : presetNames)
  for (const t of tp ? [tp] : legalTpDegrees(presets[preset], values.sp).filter((d) => d <= 4)) {
    const c = configFromPreset(preset, { tp: t, sp: values.sp });
    const { plan } = await makePlan(c);
    const live = rankLiveMemory(await replayStepMemory(c, 0));
    const m = rankMemory(plan, 0);
    const equal = accountingChecks(live, m).every((x) => x.recordedBytes === x.predictedBytes);
    const b = live.madeBytes;
    rows.push([
      `${preset} t=${t}${c.sp && t > 1 ? ' SP' : ''}`,
      formatBytes(b.weights),
      formatBytes(b.gradients),
      formatBytes(b.activations),
      formatBytes(b.workspace),
      formatBytes(live.peak.peakBytes),
      `${live.peak.peakAt} of ${live.ops} (${plan.ops[live.peak.peakAt]?.name ?? 'step end'})`,
      formatBytes(m.totalBytes),
      equal ? 'yes' : 'NO',
    ]);
  }
console.log('Rank 0, one step, float32, replayed on shapes (staging aside: the GPU collectives’ pool).');
for (const l of alignedTable(head, rows)) console.log(l);
