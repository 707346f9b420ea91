import { parseArgs } from 'node:util';
import { parseDtype, trainDtypes, type TrainDtype } from '../src/hardware/dtype.ts';
import { gpuNames, gpus } from '../src/hardware/gpus.ts';
import { scenarios, seedsV100, type Scenario } from '../src/megatron/scenarios.ts';
import { parseSystem, systemNames, systems, type SystemSpec } from '../src/hardware/systems.ts';
import type { TrainingSetup } from '../src/megatron/training-setup.ts';
import { presets } from '../src/parallel/config.ts';
import { parseDegrees, parsePreset, parseWhole } from '../src/parallel/config-parse.ts';
import { sizeFlagOptions } from './size-flags.ts';

/** Size flags, as `npm run sweep` has them. */
const sizeFlags = ['s', 'b', 'h', 'heads', 'groups', 'ffn', 'vocab'] as const;

/** What `npm run project` runs: a machine, a dtype, the setup without t, and the degrees. */
export interface ProjectArgs {
  readonly help: boolean;
  readonly json: boolean;
  readonly system: SystemSpec;
  readonly dtype: TrainDtype;
  readonly setup: Omit<TrainingSetup, 'tp'>;
  readonly degrees: readonly number[];
  readonly scenario: Scenario;
  /** --export-job DIR: write the Megatron-LM job bundle of the setup (one --tp) there instead of projecting. */
  readonly exportJob?: string;
}

/** The usage text: every flag, every system and GPU by name. */
export function usage(): string {
  const sys = systemNames.map((n) => `    ${n.padEnd(14)} ${systems[n].label}`).join('\n');
  const gpu = gpuNames.map((n) => `    ${n.padEnd(14)} ${gpus[n].label}`).join('\n');
  return `usage: npm run project -- [--scenario ${Object.keys(scenarios).join('|')}] [--system NAME] [--preset ${Object.keys(presets).join('|')}]
       [--s N --b N --h N --heads N --groups N --ffn N --vocab N] [--layers L] [--gpus N] [--tp 1,2,4,8]
       [--global-batch SEQUENCES] [--sp] [--dtype ${trainDtypes.join('|')}] [--recompute] [--no-overlap] [--json]
       [--export-job DIR]   (with one --tp: write the Megatron-LM job bundle instead, see docs/megatron-job.md)

Projects a training step of the layer × L onto a real cluster (no browser): per t at a fixed GPU budget
N = t × DP, the step time, tokens/s, model TFLOP/s per GPU, MFU, exposed communication and memory per GPU.
Defaults come from the scenario (default ${seedsV100.name}: the seeds' tiny GPT on their 8×V100 PCIe box).
With --sp each row also shows the change against the same t without SP.

systems (--system, or custom:<gpu>:<GPUs per node>:<α µs>:<GB/s>):
${sys}
GPUs (for custom systems):
${gpu}`;
}

const options = {
  scenario: { type: 'string' },
  system: { type: 'string' },
  ...sizeFlagOptions,
  layers: { type: 'string' },
  gpus: { type: 'string' },
  tp: { type: 'string' },
  'global-batch': { type: 'string' },
  sp: { type: 'boolean', default: false },
  dtype: { type: 'string' },
  recompute: { type: 'boolean', default: false },
  'no-overlap': { type: 'boolean', default: false },
  json: { type: 'boolean', default: false },
  'export-job': { type: 'string' },
  help: { type: 'boolean', default: false },
} as const;

/** Parses `npm run project` arguments; throws an Error whose message says what to change. */
export function parseProjectArgs(argv: readonly string[]): ProjectArgs {
  const { values: v, positionals } = parseArgs({ args: [...argv], options, allowPositionals: true, strict: true });
  if (positionals.length) throw new Error(`unexpected argument "${positionals[0]}": every setting is a --flag.`);
  const name = v.scenario ?? seedsV100.name;
  const scenario = scenarios[name];
  if (!scenario) throw new Error(`unknown scenario "${name}": use ${Object.keys(scenarios).join(', ')}.`);
  const base = scenario.setup;
  const sizes = { ...(v.preset !== undefined ? presets[parsePreset(v.preset)] : base.sizes) };
  for (const f of sizeFlags) {
    const text = v[f];
    if (text !== undefined) sizes[f] = parseWhole(`--${f}`, text, f === 'vocab' ? 0 : 1);
  }
  const setup: Omit<TrainingSetup, 'tp'> = {
    sizes,
    sp: v.sp,
    layers: v.layers !== undefined ? parseWhole('--layers', v.layers, 1) : base.layers,
    gpus: v.gpus !== undefined ? parseWhole('--gpus', v.gpus, 1) : base.gpus,
    globalBatch:
      v['global-batch'] !== undefined ? parseWhole('--global-batch', v['global-batch'], 1) : base.globalBatch,
    overlap: !v['no-overlap'],
    recompute: v.recompute || (base.recompute ?? false),
  };
  return {
    help: v.help,
    json: v.json,
    system: parseSystem(v.system ?? scenario.system),
    dtype: v.dtype !== undefined ? parseDtype(v.dtype) : scenario.dtype,
    setup,
    degrees: v.tp !== undefined ? parseDegrees(v.tp) : scenario.degrees,
    scenario,
    ...(v['export-job'] !== undefined && { exportJob: v['export-job'] }),
  };
}
