import { parseArgs } from 'node:util';
import { parseDtype, trainDtypes, type TrainDtype } from '../src/hardware/dtype.ts';
import { gpuNames, gpus } from '../src/hardware/gpus.ts';
import { scenarios, seedsV100, type Scenario } from '../src/megatron/scenarios.ts';
import { fabrics, parseSystem, systemNames, systems, withFabric, type SystemSpec } from '../src/hardware/systems.ts';
import {
  attentionBackends,
  cudaGraphImpls,
  defaultKernelOptions,
  fp8Formats,
  layerArchs,
  parseChoice,
  usesFlashAttention,
  type KernelOptions,
} from '../src/projection/kernel-options.ts';
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
  /** How the projected job runs its kernels (Megatron's switches; defaults: kernel-options.ts). */
  readonly kernels: KernelOptions;
  /** Print the GEMM model's table for the system's GPU instead of projecting (--gemm-table). */
  readonly gemmTable: boolean;
}

/** The usage text: every flag, every system and GPU by name. */
export function usage(): string {
  const sys = systemNames.map((n) => `    ${n.padEnd(14)} ${systems[n].label}`).join('\n');
  const gpu = gpuNames.map((n) => `    ${n.padEnd(14)} ${gpus[n].label}`).join('\n');
  return `usage: npm run project -- [--scenario ${Object.keys(scenarios).join('|')}] [--system NAME] [--preset ${Object.keys(presets).join('|')}]
       [--s N --b N --h N --heads N --groups N --ffn N --vocab N] [--layers L] [--gpus N] [--tp 1,2,4,8]
       [--global-batch SEQUENCES] [--sp] [--dtype ${trainDtypes.join('|')}] [--recompute] [--no-overlap] [--json]
       [--fabric ${Object.keys(fabrics).join('|')}] [--arch ${layerArchs.join('|')}] [--attention-backend ${attentionBackends.join('|')}]
       [--fp8-format ${fp8Formats.filter((f) => f !== 'none').join('|')}] [--cuda-graph-impl ${cudaGraphImpls.join('|')}] [--enable-cuda-graph]
       [--tp-comm-overlap] [--gemm-table]

Projects a training step of the layer × L onto a real cluster (no browser): per t at a fixed GPU budget
N = t × DP, the step time, tokens/s, model TFLOP/s per GPU, MFU, exposed communication and memory per GPU.
Defaults come from the scenario (default ${seedsV100.name}: the seeds' tiny GPT on their 8×V100 PCIe box).
With --sp each row also shows the change against the same t without SP.

Kernels (Megatron-LM core_v0.19.0 spellings; docs/projection-kernels.md has the models and sources):
  --arch gpt|llama          llama (default): the playground's layer (RMSNorm, SwiGLU, RoPE, no biases, no dropout);
                            gpt: Megatron's defaults (LayerNorm, GeLU MLP of two GEMMs, learned positions, biases,
                            dropout 0.1), priced as a transform of the same plan.
  --attention-backend B     unfused (default: s×s scores and softmax in HBM), flash or fused (one FlashAttention
                            kernel per pass; Ampere or newer).
  --fp8-format F            hybrid or e4m3: the linear layers' GEMMs in fp8 (H100, H200, B200, GB200), with casts.
  --cuda-graph-impl I       none (default: eager, ~10 µs host dispatch per kernel), local, transformer_engine or
                            full_iteration: kernels replayed from CUDA graphs, no host dispatch.
  --enable-cuda-graph       Megatron's deprecated spelling of --cuda-graph-impl local.
  --tp-comm-overlap         TP all-gathers and reduce-scatters in chunks under the GEMMs (needs --sp), priced with
                            the SMs and HBM bandwidth the communication takes from them.
  --fabric NAME             replace the system's scale-out network (same NIC count): ${Object.keys(fabrics).join(', ')}.
  --gemm-table              print the GEMM model's times for representative shapes on the system's GPU and exit.

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
  help: { type: 'boolean', default: false },
  fabric: { type: 'string' },
  arch: { type: 'string' },
  'attention-backend': { type: 'string' },
  'fp8-format': { type: 'string' },
  'cuda-graph-impl': { type: 'string' },
  'enable-cuda-graph': { type: 'boolean', default: false },
  'tp-comm-overlap': { type: 'boolean', default: false },
  'gemm-table': { type: 'boolean', default: false },
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
  const base0 = parseSystem(v.system ?? scenario.system);
  const system = v.fabric !== undefined ? withFabric(base0, v.fabric) : base0;
  const kernels = parseKernelFlags(v, setup.sp);
  if (kernels.fp8 !== 'none' && system.gpu.peakTflops.fp8 === undefined)
    throw new Error(
      `--fp8-format ${kernels.fp8}: ${system.gpu.label} has no fp8 tensor cores; choose an H100, H200, B200 or GB200 system.`,
    );
  if (usesFlashAttention(kernels) && system.gpu.arch === 'volta')
    throw new Error(
      `--attention-backend ${kernels.attentionBackend}: FlashAttention needs an Ampere or newer GPU, not ${system.gpu.label}; use unfused.`,
    );
  return {
    help: v.help,
    json: v.json,
    gemmTable: v['gemm-table'],
    kernels,
    system,
    dtype: v.dtype !== undefined ? parseDtype(v.dtype) : scenario.dtype,
    setup,
    degrees: v.tp !== undefined ? parseDegrees(v.tp) : scenario.degrees,
    scenario,
  };
}

/** The kernel switches from their flags, Megatron's rules checked (--enable-cuda-graph vs --cuda-graph-impl; --tp-comm-overlap needs --sp). */
function parseKernelFlags(
  v: {
    arch?: string;
    'attention-backend'?: string;
    'fp8-format'?: string;
    'cuda-graph-impl'?: string;
    'enable-cuda-graph': boolean;
    'tp-comm-overlap': boolean;
  },
  sp: boolean,
): KernelOptions {
  const d = defaultKernelOptions;
  if (v['enable-cuda-graph'] && v['cuda-graph-impl'] !== undefined)
    throw new Error('--enable-cuda-graph is the old spelling of --cuda-graph-impl local: give one of them, not both.');
  if (v['tp-comm-overlap'] && !sp)
    throw new Error(
      '--tp-comm-overlap needs --sp: Megatron overlaps TP communication only under sequence parallelism.',
    );
  return {
    arch: v.arch !== undefined ? parseChoice('--arch', v.arch, layerArchs) : d.arch,
    attentionBackend:
      v['attention-backend'] !== undefined
        ? parseChoice('--attention-backend', v['attention-backend'], attentionBackends)
        : d.attentionBackend,
    fp8: v['fp8-format'] !== undefined ? parseChoice('--fp8-format', v['fp8-format'], fp8Formats) : d.fp8,
    cudaGraphImpl: v['enable-cuda-graph']
      ? 'local'
      : v['cuda-graph-impl'] !== undefined
        ? parseChoice('--cuda-graph-impl', v['cuda-graph-impl'], cudaGraphImpls)
        : d.cudaGraphImpl,
    tpCommOverlap: v['tp-comm-overlap'],
  };
}
