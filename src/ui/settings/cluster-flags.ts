// The cluster panel's data-parallel and memory flags as the projection takes them, and Megatron's rules on them placed at their controls (pure, no DOM).
import { cudaGraphRecomputeRefusals } from '../../megatron/cuda-graph-rules.ts';
import { checkDataParallelFlags, noP2pOverlapRefusal, type TrainingSetup } from '../../megatron/training-setup.ts';
import { fsdpRunFacts } from '../../projection/step/fsdp-step.ts';
import {
  defaultActivationOffload,
  offloadTunings,
  offloadTuningRules,
  type ActivationOffload,
} from '../../megatron/activation-offload.ts';
import { offloadLaunchEnv } from '../../megatron/activation-offload-launch.ts';
import { fsdpLabel } from '../../megatron/fsdp.ts';
import { fp4ParamGatherRefusals, fp8ParamGatherRefusals, type Fp8Recipe } from '../../megatron/low-precision.ts';
import { systemNames, systems, type SystemName } from '../../hardware/systems.ts';
import { defaultKernelOptions, lowPrecisionRefusals } from '../../projection/layer/kernel-options.ts';
import { activationOffloadRefusalsOf, cudaGraphRefusalsOf } from '../../projection/step/chunk-times.ts';
import { clusterModelOf, type ClusterModelSpec } from './cluster-model.ts';
import { placeIssues, type ControlField, type FieldIssue } from './field-issues.ts';
import type { Settings } from './state.ts';

/** The TrainingSetup fields the page's cluster flags set. */
export type ClusterFlags = Pick<
  TrainingSetup,
  | 'cp'
  | 'recomputation'
  | 'distributedOptimizer'
  | 'overlapGradReduce'
  | 'overlapParamGather'
  | 'fsdp'
  | 'fp8ParamGather'
  | 'fp4ParamGather'
  | 'activationOffload'
  | 'optimizerCpuOffload'
  | 'overlapP2pComm'
  | 'bucketSize'
>;

/** The page's fine-grained activation offload: `offload`'s modules, each tuning flag the page's or Megatron's default (null). */
const activationOffloadOf = (s: Settings): ActivationOffload => ({
  modules: s.offload,
  fraction: s.offloadfrac ?? defaultActivationOffload.fraction,
  minTensorElements: s.offloadmin ?? defaultActivationOffload.minTensorElements,
  deltaBytesPerPpRank: s.offloaddelta ?? defaultActivationOffload.deltaBytesPerPpRank,
});

/**
 * The cluster flags of some settings, as layoutSetup (projection/studies/layout-setup.ts) maps an
 * advisor row: full recompute is uniform with one layer per checkpoint; selective recomputes
 * `rmodules`; `distopt` is the mesh run's and the cluster's --use-distributed-optimizer.
 */
export const clusterFlagsOf = (s: Settings): ClusterFlags => ({
  cp: s.cp,
  ...(s.recompute === 'full' && { recomputation: { granularity: 'full', method: 'uniform', layers: 1 } }),
  ...(s.recompute === 'selective' && { recomputation: { granularity: 'selective', modules: s.rmodules } }),
  distributedOptimizer: s.distopt,
  overlapGradReduce: s.ogr,
  overlapParamGather: s.opg,
  ...(s.fsdp && { fsdp: s.fsdp }),
  // fp8pg is the quantized parameter gather of the page's low-precision format: --fp4-param-gather under fp4.
  ...(s.fp8pg && (s.fp4 !== 'none' ? { fp4ParamGather: true } : { fp8ParamGather: true })),
  ...(s.offload.length > 0 && { activationOffload: activationOffloadOf(s) }),
  // --optimizer-cpu-offload with --use-precision-aware-optimizer (arguments.py:1803-1807), its copies overlapped with --overlap-cpu-optimizer-d2h-h2d.
  ...(s.cpuoffload !== null && { optimizerCpuOffload: { fraction: s.cpuoffload, overlapD2hH2d: s.cpuov } }),
  // Off only: on is Megatron's default (v > 1), which the projection applies itself.
  ...(!s.p2pov && { overlapP2pComm: false }),
  ...(s.bucket !== null && { bucketSize: s.bucket }),
});

/**
 * The cluster flags as a Megatron-LM launch writes them, under the page's fp8 recipe: the
 * environment they need (with --fine-grained-activation-offloading, offloadLaunchEnv) and the flags,
 * one string each (FSDP by its short label).
 */
export function clusterLaunchOf(
  f: ClusterFlags,
  fp8Recipe?: Fp8Recipe,
): {
  readonly env: Readonly<Record<string, string>>;
  readonly flags: readonly string[];
} {
  const r = f.recomputation;
  const flags = [
    (f.cp ?? 1) > 1 ? `--context-parallel-size ${f.cp}` : '',
    r ? `--recompute-granularity ${r.granularity}` : '',
    r?.granularity === 'selective' && r.modules ? `--recompute-modules ${r.modules.join(' ')}` : '',
    f.distributedOptimizer ? '--use-distributed-optimizer' : '',
    f.overlapGradReduce ? '--overlap-grad-reduce' : '',
    f.overlapParamGather ? '--overlap-param-gather' : '',
    f.fsdp ? fsdpLabel(f.fsdp) : '',
    f.fp8ParamGather ? '--fp8-param-gather' : '',
    // MXFP8 parameters gather through the gradient buffer (low-precision.ts quantizedGatherBytes).
    f.fp8ParamGather && fp8Recipe === 'mxfp8' ? '--reuse-grad-buf-for-mxfp8-param-ag' : '',
    f.fp4ParamGather ? '--fp4-param-gather' : '',
    f.activationOffload
      ? `--fine-grained-activation-offloading --offload-modules ${f.activationOffload.modules.join(' ')}`
      : '',
    // Each tuning flag Megatron would not take as its default.
    ...offloadTunings.map((k) => {
      const v = f.activationOffload?.[k];
      return v !== undefined && v !== defaultActivationOffload[k] ? `${offloadTuningRules[k].flag} ${v}` : '';
    }),
    f.optimizerCpuOffload
      ? `--optimizer-cpu-offload --use-precision-aware-optimizer --optimizer-offload-fraction ${f.optimizerCpuOffload.fraction}`
      : '',
    f.optimizerCpuOffload?.overlapD2hH2d ? '--overlap-cpu-optimizer-d2h-h2d' : '',
    f.overlapP2pComm === false ? '--no-overlap-p2p-communication' : '',
    f.bucketSize !== undefined ? `--ddp-bucket-size ${f.bucketSize}` : '',
  ].filter(Boolean);
  return { env: f.activationOffload ? offloadLaunchEnv : {}, flags };
}

/** The settings each data-parallel rule involves (checkDataParallelFlags). */
const dataParallelFields: readonly ControlField[] = ['opg', 'ogr', 'distopt', 'fsdp', 'pp', 'dtype'];

/**
 * Megatron's rules on the data-parallel flags broken by `s` (checkDataParallelFlags: the parameter
 * gather's needs, FSDP2 with p > 1, the distributed optimizer or fp16, …), at the control just changed
 * when it is involved, else at fsdp or opg. The cluster panel's rows say the same per row.
 */
export function clusterIssues(s: Settings, changed?: ControlField): FieldIssue[] {
  try {
    // The page's kernel switches leave gradient accumulation fusion at the projection's default.
    checkDataParallelFlags({ ...clusterFlagsOf(s), pp: s.pp }, fsdpRunFacts({ dtype: s.dtype }));
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    return placeIssues([{ field: s.fsdp ? 'fsdp' : 'opg', fields: dataParallelFields, message }], changed);
  }
  return placeIssues([...pipelineIssues(s), ...memoryLeverIssues(s)], changed);
}

/** Megatron's refusal of --no-overlap-p2p-communication with the interleaved schedule at p ≤ 2 (training-setup.ts noP2pOverlapRefusal), at p2pov. */
function pipelineIssues(s: Settings): { field: ControlField; fields: readonly ControlField[]; message: string }[] {
  const message = noP2pOverlapRefusal({ ...clusterFlagsOf(s), pp: s.pp, vpp: s.vpp });
  return message ? [{ field: 'p2pov', fields: ['p2pov', 'pp', 'vpp'], message }] : [];
}

/**
 * Megatron's and Transformer Engine's rules on the low-precision switches (kernel-options.ts
 * lowPrecisionRefusals, at fp4 or fp8recipe) and the memory levers (low-precision.ts fp8ParamGatherRefusals at fp8pg, with the
 * page's fp8 format and recipe; activation-offload.ts activationOffloadRefusals at
 * offload; cuda-graph-rules.ts cudaGraphRecomputeRefusals at graphs), as the projection checks them
 * (chunk-times.ts).
 */
function memoryLeverIssues(s: Settings): { field: ControlField; fields: readonly ControlField[]; message: string }[] {
  const out: { field: ControlField; fields: readonly ControlField[]; message: string }[] = [];
  // The fp8 recipe or NVFP4 on a catalog GPU that lacks it (a loaded system file's GPU: its rows say so).
  const gpu = (systemNames as readonly string[]).includes(s.system) ? systems[s.system as SystemName].gpu : undefined;
  const lowPrecision = gpu
    ? lowPrecisionRefusals(
        {
          ...defaultKernelOptions,
          fp8: s.fp8,
          ...(s.fp8 !== 'none' && { fp8Recipe: s.fp8recipe }),
          ...(s.fp4 !== 'none' && { fp4: s.fp4 }),
        },
        gpu.arch,
      )
    : [];
  if (lowPrecision.length)
    out.push({
      field: s.fp4 !== 'none' ? 'fp4' : 'fp8recipe',
      fields: ['fp4', 'fp8', 'fp8recipe', 'system'],
      message: `${lowPrecision.join(' ')} (${gpu!.label})`,
    });
  if (s.fp8pg) {
    const why =
      s.fp4 !== 'none'
        ? fp4ParamGatherRefusals({ fp4: true, distributedOptimizer: s.distopt, fsdp: s.fsdp !== null })
        : fp8ParamGatherRefusals({
            ...(s.fp8 !== 'none' && { fp8Recipe: s.fp8recipe }),
            shardedOptimizer: s.distopt || s.fsdp !== null,
            fsdp: s.fsdp !== null,
            optimizerCpuOffload: s.cpuoffload !== null,
          });
    if (why.length)
      out.push({
        field: 'fp8pg',
        fields: ['fp8pg', 'fp8', 'fp4', 'distopt', 'fsdp', 'cpuoffload'],
        message: why.join(' '),
      });
  }
  if (s.graphs !== 'none') {
    const why = cudaGraphRecomputeRefusals(s.graphs, {
      granularity: s.recompute === 'none' ? undefined : s.recompute,
      modules: s.recompute === 'selective' ? s.rmodules : [],
      dropout: s.layerArch === 'gpt',
      scope: s.gscope,
    });
    if (why.length)
      out.push({
        field: 'graphs',
        fields: ['graphs', 'gscope', 'recompute', 'rmodules', 'layerArch'],
        message: why.join(' '),
      });
    const scope = graphScopeIssue(s, why);
    if (scope) out.push(scope);
  }
  if (s.offload.length) {
    // As the projection refuses it (chunk-times.ts activationOffloadRefusalsOf): Megatron's rules, then what is not priced.
    const setup = clusterSetupOf(s);
    const why = setup ? activationOffloadRefusalsOf(setup, { ...defaultKernelOptions, cudaGraphImpl: s.graphs }) : [];
    if (why.length)
      out.push({
        field: 'offload',
        fields: ['offload', 'recompute', 'rmodules', 'graphs', 'cmodel'],
        message: why.join(' '),
      });
  }
  return out;
}

/**
 * The cluster model with the page's flags at t = 1 (the layout does not enter the rules placed from it),
 * or undefined where the model itself is refused (clusterModelIssues says why at cmodel).
 */
function clusterSetupOf(s: Settings): TrainingSetup | undefined {
  let model: ClusterModelSpec;
  try {
    model = clusterModelOf(s);
  } catch {
    return undefined;
  }
  return {
    sizes: model.sizes,
    layers: model.layers,
    ...(model.moe && { moe: model.moe }),
    ...(model.mla && { mla: model.mla }),
    tp: 1,
    sp: false,
    gpus: s.gpus,
    globalBatch: model.sizes.b,
    overlap: true,
    ...clusterFlagsOf(s),
  };
}

/**
 * The scope's refusals at gscope, as the projection checks them on the cluster model
 * (chunk-times.ts cudaGraphRefusalsOf: Megatron's cudaGraphScopeRefusals with the model's MoE
 * layers, then a scope the projection does not price), less the recomputation's (at graphs).
 */
function graphScopeIssue(
  s: Settings,
  atGraphs: readonly string[],
): { field: ControlField; fields: readonly ControlField[]; message: string } | undefined {
  const setup = s.gscope.length ? clusterSetupOf(s) : undefined;
  if (!setup) return undefined;
  const kernels = {
    ...defaultKernelOptions,
    layerArch: s.layerArch,
    cudaGraphImpl: s.graphs,
    cudaGraphModules: s.gscope,
  };
  const why = cudaGraphRefusalsOf(setup, kernels).filter((m) => !atGraphs.includes(m));
  return why.length
    ? { field: 'gscope', fields: ['gscope', 'graphs', 'cmodel', 'experts', 'rmodules'], message: why.join(' ') }
    : undefined;
}
