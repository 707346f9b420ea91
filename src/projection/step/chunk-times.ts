import { dtypeBytes } from '../../hardware/dtype.ts';
import { cudaGraphRecomputeRefusals, cudaGraphScopeRefusals } from '../../megatron/cuda-graph-rules.ts';
import { moeLayerPattern } from '../../megatron/moe.ts';
import { pricedGraphScopes, pricedMoeGraphScopes } from '../layer/cuda-graph-scope.ts';
import { overlapLossMs, overlapSlowdown, p2pFootprint } from '../../hardware/overlap-cost.ts';
import {
  checkDataParallelFlags,
  degreesOf,
  microBatchesOf,
  overlapsP2p,
  recomputeOf,
  setupConfig,
  type TrainingSetup,
} from '../../megatron/training-setup.ts';
import { headDim } from '../../parallel/config.ts';
import type { LayerPlan } from '../../parallel/plan-types.ts';
import type { Timeline } from '../../schedule/schedule.ts';
import {
  defaultKernelOptions,
  fp8RecipeOf,
  lowPrecisionRefusals,
  usesCudaGraphs,
  type KernelOptions,
} from '../layer/kernel-options.ts';
import type { Machine } from '../layer/projected-layer.ts';
import { chunkRecompute, type ChunkRecompute } from '../layer/recompute.ts';
import { defaultRecomputeModules, fp8RecomputeRefusal } from '../../megatron/recompute-modules.ts';
import { activationOffloadRefusals } from '../../megatron/activation-offload.ts';
import {
  offloadGroups,
  offloadTensors,
  stageOffload,
  type OffloadPassTimes,
  type StageOffload,
} from './activation-offload.ts';
import {
  gatherBytesPerParam,
  quantizedParamRefusals,
  quantizedWeightsOf,
  stageLayerParams,
} from './quantized-params.ts';
import { weightCopyBytes } from '../../megatron/low-precision.ts';
import { cpAttention } from '../links/context-parallel.ts';
import { bucketSyncUs, gatherOrder, gradBuckets } from '../links/data-parallel.ts';
import { groupLinks, membersPerNode, p2pUs } from '../links/group-links.ts';
import { groupLink } from '../../hardware/systems.ts';
import { holdsEmbedding, holdsOutput, splitLayers, type PipelineSplit } from '../../mesh/pipeline-split.ts';
import { stageModel, type StageModel } from '../pipeline/stage-model.ts';
import { dpOptionsOf, gatherInSchedule, paramGatherStart } from './dp-sync.ts';
import { paramGatherDispatchOf } from '../../megatron/megatron-release.ts';
import { denseMlpSpan, expertDpLink, moeRecomputeOf, moeStepModel, type MoeStepModel } from './moe-step.ts';
import { fsdpLayerTimes } from '../links/fsdp.ts';
import { dpTailChunkParams, fsdpRunFacts, setupStateBytes } from './fsdp-step.ts';
import { optimizerOffloadFractionRefusal } from './optimizer-offload.ts';
import type { LayerPricing } from './layer-pricing.ts';
import { mlaCoreBlock, mlaCpBytes, mlaStepModel, type MlaStepModel } from './mla-step.ts';

/** stageModel per pricing, by what it reads besides the plans (the split, dtype, tied, flash): exact reuse. */
const stageModels = new WeakMap<LayerPricing, Map<string, ReturnType<typeof stageModel>>>();

function stageModelOf(
  pricing: LayerPricing,
  split: PipelineSplit,
  machine: Machine,
  setup: TrainingSetup,
): ReturnType<typeof stageModel> {
  let byKey = stageModels.get(pricing);
  if (!byKey) stageModels.set(pricing, (byKey = new Map()));
  const { dtype } = machine;
  const layerArch = (machine.kernels ?? defaultKernelOptions).layerArch;
  const key = `${split.layers.map((row) => row.join(',')).join(';')}|${dtype}|${setup.tiedEmbeddings ?? false}|${setup.flashAttention ?? false}|${layerArch}|${setup.sizes.s}`;
  let model = byKey.get(key);
  if (!model) byKey.set(key, (model = stageModel(pricing.full, pricing.block, split, dtype, setup, layerArch)));
  return model;
}

/**
 * chunkTimes per setup, for the machine and pricing it was computed with: the advisor bounds a
 * candidate (stepLowerBounds) and then assembles it with the same three objects; exact reuse.
 */
const chunkTimesMemo = new WeakMap<
  TrainingSetup,
  { machine: Machine; pricing: LayerPricing; value: ReturnType<typeof computeChunkTimes> }
>();

/**
 * The fields of a setup computeChunkTimes reads only through setupConfig's checkDataParallelFlags:
 * setups that differ in nothing else (a search's optimizer and overlap flags) share their chunk times.
 */
const dataParallelFlags: ReadonlySet<string> = new Set<keyof TrainingSetup>([
  'distributedOptimizer',
  'overlapGradReduce',
  'overlapParamGather',
  'bucketSize',
]);

/** computeChunkTimes per pricing, machine and setup less its data-parallel flags. */
const chunkTimesShared = new WeakMap<
  LayerPricing,
  WeakMap<Machine, Map<string, ReturnType<typeof computeChunkTimes>>>
>();

/**
 * computeChunkTimes, remembered for the last (machine, pricing) each setup object was priced with,
 * and shared by setups equal but for their data-parallel flags (whose own rules are still checked).
 */
export function chunkTimes(setup: TrainingSetup, machine: Machine, pricing: LayerPricing) {
  const hit = chunkTimesMemo.get(setup);
  if (hit && hit.machine === machine && hit.pricing === pricing) return hit.value;
  let byMachine = chunkTimesShared.get(pricing);
  if (!byMachine) chunkTimesShared.set(pricing, (byMachine = new WeakMap()));
  let byKey = byMachine.get(machine);
  if (!byKey) byMachine.set(machine, (byKey = new Map()));
  const key = JSON.stringify(setup, (k: string, v: unknown) => (dataParallelFlags.has(k) ? undefined : v));
  let value = byKey.get(key);
  if (value) checkDataParallelFlags(setup, fsdpRunFacts(machine));
  else byKey.set(key, (value = computeChunkTimes(setup, machine, pricing)));
  chunkTimesMemo.set(setup, { machine, pricing, value });
  return value;
}

/** Each chunk's compute per micro-batch (forward; backward with the recomputed forward) and what it reads. */
/**
 * Megatron's refusals of the kernel options' CUDA graphs with the setup's recomputation and MoE
 * layers (cuda-graph-rules.ts; dropout in the GPT layer, none in the classroom's), then a partial
 * --cuda-graph-modules scope the projection does not price (it prices attn and mlp of dense layers,
 * attn and moe where every layer is MoE, under transformer_engine: cuda-graph-scope.ts,
 * cuda-graph-memory.ts): none without graphs. Drop-and-pad is a capacity factor with
 * --moe-pad-expert-input-to-capacity (transformer_config.py:2505-2511); the projection has no
 * --moe-router-padding-for-fp8.
 */
export function cudaGraphRefusalsOf(setup: TrainingSetup, kernels: KernelOptions): string[] {
  if (kernels.cudaGraphImpl === 'none') return [];
  const rc = recomputeOf(setup);
  const modules = rc?.granularity === 'selective' ? (rc.modules ?? defaultRecomputeModules) : [];
  const scope = kernels.cudaGraphModules ?? [];
  const moe = setup.moe;
  const allLayersMoe = moe !== undefined && moeLayerPattern(moe.layerFreq, setup.layers).every(Boolean);
  const why = [
    ...cudaGraphScopeRefusals(kernels.cudaGraphImpl, scope, {
      moe: moe && {
        allLayersMoe,
        dropAndPad: moe.capacityFactor !== undefined && moe.padToCapacity === true,
        preprocessSyncs: moe.dispatcher === 'alltoall' && moe.capacityFactor !== undefined,
      },
      recomputeModules: modules,
    }),
    ...cudaGraphRecomputeRefusals(kernels.cudaGraphImpl, {
      granularity: rc?.granularity,
      modules,
      dropout: kernels.layerArch === 'gpt',
      scope,
    }),
  ];
  const priced = allLayersMoe ? pricedMoeGraphScopes : pricedGraphScopes;
  const unpriced = scope.filter((x) => !priced.includes(x));
  const where =
    kernels.cudaGraphImpl !== 'transformer_engine'
      ? `with --cuda-graph-impl ${kernels.cudaGraphImpl}`
      : setup.mla
        ? 'in a model with MLA layers'
        : moe && !allLayersMoe
          ? 'in a model with dense and MoE layers'
          : unpriced.length
            ? `for ${unpriced.join(', ')}`
            : undefined;
  if (!why.length && scope.length && where)
    why.push(
      `--cuda-graph-modules ${scope.join(' ')}: a partial capture scope is not priced yet ${where} (priced under --cuda-graph-impl transformer_engine: ${pricedGraphScopes.join(', ')} of dense layers; ${pricedMoeGraphScopes.join(', ')} where every layer is MoE): leave --cuda-graph-modules out (the whole layer) or use those.`,
    );
  return why;
}

function computeChunkTimes(setup: TrainingSetup, machine: Machine, pricing: LayerPricing) {
  const c = setupConfig(setup);
  checkDataParallelFlags(setup, fsdpRunFacts(machine));
  const offloadShare = setup.optimizerCpuOffload && optimizerOffloadFractionRefusal(setup.optimizerCpuOffload.fraction);
  if (offloadShare) throw new Error(offloadShare);
  if (setup.optimizerCpuOffload && setup.moe)
    throw new Error(
      '--optimizer-cpu-offload with MoE layers is not priced yet (the expert state is held apart): project it without the offload.',
    );
  const deg = degreesOf(setup);
  const { system, dtype } = machine;
  const m = microBatchesOf(setup);
  const rc = recomputeOf(setup);
  const modules = rc?.granularity === 'selective' ? (rc.modules ?? defaultRecomputeModules) : [];
  const kernels = machine.kernels ?? defaultKernelOptions;
  const lowPrecision = lowPrecisionRefusals(kernels, system.gpu.arch);
  if (lowPrecision.length) throw new Error(`${lowPrecision.join(' ')} (${system.gpu.label})`);
  const graphs = cudaGraphRefusalsOf(setup, kernels);
  if (graphs.length) throw new Error(graphs.join(' '));
  const fp8Refusal = fp8RecomputeRefusal(modules, fp8RecipeOf(kernels));
  if (fp8Refusal) throw new Error(`${fp8Refusal.message} (${fp8Refusal.source})`);
  const quantizedParams = quantizedParamRefusals(setup, kernels);
  if (quantizedParams.length) throw new Error(quantizedParams.join(' '));
  const split = splitLayers(setup.layers, deg.pp, deg.vpp, {
    first: setup.firstStageLayers,
    last: setup.lastStageLayers,
  });
  const { block, pieces, core } = pricing;
  const links = machine.placed ?? groupLinks(system, deg);
  const bytes = dtypeBytes[dtype];

  // Context parallelism: the exchange of K, V (and Q, O with all-to-alls) per layer, by --cp-comm-type.
  const own = block.ranks[0]!;
  const d = headDim(c);
  const kvBytes = 2 * c.s * c.b * own.kvGroups.length * d * bytes;
  const qBytes = c.s * c.b * (own.heads[1] - own.heads[0]) * d * bytes;
  const exchange = setup.cpExchange ?? { type: 'p2p' as const };
  // a2a+p2p: the inner all-to-all group of a (CP ranks t apart), the outer ring of r (t·a apart); assumed consecutive.
  const [a, r] = exchange.hierarchical ?? [1, deg.cp];
  const cpLinks = machine.placed
    ? { cp: links.cp }
    : {
        cp: links.cp,
        inner: groupLink(system, a, membersPerNode(system, deg.tp, a)),
        outer: groupLink(system, r, membersPerNode(system, deg.tp * a, r)),
      };
  // Multi-latent attention (mla-step.ts): its layer replaces the dense attention's span in every
  // layer; under CP its ring moves the up-projected K and V per head and steps MLA's core block.
  const mla = mlaStepModel(setup, machine, deg, block, pricing.blockT, links.tp, modules);
  const coreBlock = mla ? mlaCoreBlock(mla) : core;
  const ring = cpAttention(
    exchange,
    deg.cp,
    coreBlock,
    mla ? mlaCpBytes(mla.shapes, bytes) : { q: qBytes, kv: kvBytes },
    cpLinks,
    system,
  );

  // MoE layers (moe-step.ts): their MoE part replaces the dense MLP's span of the block.
  const moe = moeStepModel(setup, machine, deg, split, block, pricing.blockT, links.tp);
  const moeIn = (i: number, ch: number): number => (moe ? moe.layersPerChunk[i]![ch]! : 0);
  const moeF = moe ? moe.forwardMs - moe.denseMlp.forwardMs : 0;
  const moeB = moe ? moe.backwardMs - moe.denseMlp.backwardMs : 0;
  const model = withMlaLayers(withMoeParams(stageModelOf(pricing, split, machine, setup), moe), mla, split.layers);
  const moeRedo = moe ? moeRecomputeOf(moe, modules) : undefined;
  const recomputed: ChunkRecompute[][] = split.layers.map((row, i) =>
    row.map((n, ch) =>
      withMoeActivations(chunkRecompute(n, model.layer, rc), moe, moeIn(i, ch), rc, model.layer.mlp, moeRedo),
    ),
  );
  const mlaF = mla ? mla.forwardMs - mla.denseAttention.forwardMs : 0;
  const mlaB = mla ? mla.backwardMs - mla.denseAttention.backwardMs + mla.upProjRecomputeMs : 0;
  const layerF = pieces.layer.forward.ms + ring.forwardMs + mlaF;
  const layerB = pieces.layer.backward.ms + ring.backwardMs + mlaB;
  // --fine-grained-activation-offloading (activation-offload.ts): the modules' inputs on the host
  // between each layer's passes, per pipeline rank and chunk; the copies' time beyond the layer's compute exposed.
  const off = offloadOf(setup, machine, pricing.block, moe, split, m, {
    dense: { forwardMs: layerF, backwardMs: layerB },
    moe: { forwardMs: moe?.forwardMs ?? 0, backwardMs: moe?.backwardMs ?? 0 },
  });
  const rec: ChunkRecompute[][] = off
    ? recomputed.map((row, i) =>
        row.map((r, ch) => ({
          ...r,
          // The most a micro-batch of the chunk offloads; others keep the rest (stage-allocations.ts).
          keptBytes: r.keptBytes - off[i]!.maxOffloadedBytes[ch]!,
          // One layer's offloaded tensors back on the GPU ahead of its backward.
          backwardTransientBytes: Math.max(r.backwardTransientBytes, off[i]!.reloadBytes[ch]!),
        })),
      )
    : recomputed;
  const offF = (i: number, ch: number): number => (off ? off[i]!.exposedForwardMs[ch]! : 0);
  const offB = (i: number, ch: number): number => (off ? off[i]!.exposedBackwardMs[ch]! : 0);
  const coreF = deg.cp * coreBlock.forwardMs + (ring.forwardMs - (deg.cp - 1) * coreBlock.forwardMs);
  // FSDP's per-unit collectives (links/fsdp.ts), on each layer's pass and once per chunk pass.
  const fsdp = setup.fsdp
    ? fsdpLayerTimes(
        setup.fsdp,
        dtype,
        model.layerParams,
        deg.dp * deg.cp,
        links.dpCp,
        system,
        system.gpu,
        layerF,
        layerB,
      )
    : undefined;
  // With MoE, FSDP shards each MoE layer's experts over the expert-DP group, dense parameters over DP·cp
  // (mcore_fsdp_adapter.py:400-440, core_v0.19.0: expt_device_mesh over expt_dp_group): the expert
  // unit's all-gather and reduce-scatter on the EDP link under the MoE part of the layer's passes.
  const fsdpExperts =
    setup.fsdp && moe
      ? fsdpLayerTimes(
          setup.fsdp,
          dtype,
          moe.expertParams,
          moe.degrees.edp,
          expertDpLink(system, moe.degrees),
          system,
          system.gpu,
          moe.forwardMs,
          moe.backwardMs,
        )
      : undefined;
  const fsdpF = (n: number): number => (fsdp && n > 0 ? n * fsdp.layerForwardMs + fsdp.chunkForwardMs : 0);
  const fsdpB = (n: number): number => (fsdp && n > 0 ? n * fsdp.layerBackwardMs + fsdp.chunkBackwardMs : 0);
  const fsdpExpertF = (n: number): number =>
    fsdpExperts && n > 0 ? n * fsdpExperts.layerForwardMs + fsdpExperts.chunkForwardMs : 0;
  const fsdpExpertB = (n: number): number =>
    fsdpExperts && n > 0 ? n * fsdpExperts.layerBackwardMs + fsdpExperts.chunkBackwardMs : 0;
  const forwardMs = (i: number, ch: number): number =>
    split.layers[i]![ch]! * layerF +
    fsdpF(split.layers[i]![ch]!) +
    fsdpExpertF(moeIn(i, ch)) +
    moeIn(i, ch) * moeF +
    offF(i, ch) +
    (holdsEmbedding(i, ch) ? pieces.embedding.forward.ms : 0) +
    (holdsOutput(split, i, ch) ? pieces.output.forward.ms : 0);
  // Full recomputation re-runs every layer of the chunk, its MoE layers' forwards included.
  // --recompute-modules mlp and layernorm: the dense MLP's forward span and the two norms' forward kernels again;
  // moe, moe_act, shared_experts: their forwards in each MoE layer (moeRecomputeOf).
  const mlpF = rc?.granularity === 'selective' ? denseMlpSpan(block, pricing.blockT).forwardMs : 0;
  const normF = rc?.granularity === 'selective' ? normForwardMs(block, pricing.blockT) : 0;
  const redoMs = (i: number, ch: number): number =>
    rec[i]![ch]!.recomputedLayers * layerF +
    Math.min(rec[i]![ch]!.recomputedLayers, moeIn(i, ch)) * moeF +
    rec[i]![ch]!.recomputedCoreAttention * coreF +
    (rec[i]![ch]!.recomputedMlp ?? 0) * mlpF +
    (rec[i]![ch]!.recomputedNorms ?? 0) * normF +
    (rec[i]![ch]!.recomputedMoeModules ?? 0) * (moeRedo?.redoMs ?? 0);
  const backwardMs = (i: number, ch: number): number =>
    split.layers[i]![ch]! * layerB +
    fsdpB(split.layers[i]![ch]!) +
    fsdpExpertB(moeIn(i, ch)) +
    moeIn(i, ch) * moeB +
    offB(i, ch) +
    redoMs(i, ch) +
    (holdsEmbedding(i, ch) ? pieces.embedding.backward.ms : 0) +
    (holdsOutput(split, i, ch) ? pieces.output.backward.ms : 0);
  const expertParams = split.layers.map((row, i) => row.map((_, ch) => moeIn(i, ch) * (moe?.expertParams ?? 0)));
  return {
    c,
    deg,
    m,
    rc,
    modules,
    split,
    links,
    bytes,
    own,
    ring,
    model,
    rec,
    off,
    layerF,
    layerB,
    forwardMs,
    backwardMs,
    redoMs,
    moe,
    mla,
    expertParams,
    fsdp,
    fsdpExperts,
  };
}

/**
 * Why the projection refuses a setup's --fine-grained-activation-offloading: Megatron's refusals
 * (activationOffloadRefusals) and what is not priced (full recomputation, where the checkpointed layers
 * save no module inputs; MLA's attention inputs); none without the offload. The page places them at
 * its `offload` control from this list.
 */
export function activationOffloadRefusalsOf(setup: TrainingSetup, kernels: KernelOptions): string[] {
  const o = setup.activationOffload;
  if (!o) return [];
  const rc = recomputeOf(setup);
  const modules = rc?.granularity === 'selective' ? (rc.modules ?? defaultRecomputeModules) : [];
  const why = activationOffloadRefusals(o, { recomputeModules: modules, cudaGraphs: usesCudaGraphs(kernels) });
  if (rc?.granularity === 'full')
    why.push(
      '--fine-grained-activation-offloading with --recompute-granularity full is not priced (the checkpointed layers save no module inputs): use selective recomputation.',
    );
  if (setup.mla)
    why.push(
      '--fine-grained-activation-offloading with multi-latent attention is not priced (its attention inputs differ): project it without the offload.',
    );
  return why;
}

/**
 * Each pipeline rank's offload under --fine-grained-activation-offloading
 * (projection/step/activation-offload.ts stageOffload), or undefined without it; what
 * activationOffloadRefusalsOf refuses thrown with the reason.
 */
function offloadOf(
  setup: TrainingSetup,
  machine: Machine,
  block: LayerPlan,
  moe: MoeStepModel | undefined,
  split: PipelineSplit,
  m: number,
  pass: OffloadPassTimes,
): StageOffload[] | undefined {
  const o = setup.activationOffload;
  if (!o) return undefined;
  const why = activationOffloadRefusalsOf(setup, machine.kernels ?? defaultKernelOptions);
  if (why.length) throw new Error(why.join(' '));
  const tensors = offloadTensors(block, machine.dtype, setup.flashAttention ?? false, moe);
  const groups = { dense: offloadGroups(tensors.dense, o), moe: offloadGroups(tensors.moe, o) };
  return split.layers.map((layers, i) =>
    stageOffload(
      {
        stage: i,
        stages: split.layers.length,
        microBatches: m,
        layers,
        moeLayers: layers.map((_, ch) => (moe ? moe.layersPerChunk[i]![ch]! : 0)),
      },
      groups,
      o,
      machine.system,
      pass,
    ),
  );
}

/**
 * The stage model with every layer's attention multi-latent (mla-step.ts): each layer's
 * parameters and kept activations changed by MLA's over the dense attention's.
 */
function withMlaLayers(
  model: StageModel,
  mla: MlaStepModel | undefined,
  layers: readonly (readonly number[])[],
): StageModel {
  if (!mla) return model;
  const chunkParams = model.chunkParams.map((row, i) => row.map((p, ch) => p + layers[i]![ch]! * mla.paramDelta));
  return {
    ...model,
    chunkParams,
    stageParams: chunkParams.map((row) => row.reduce((a, x) => a + x, 0)),
    layerParams: model.layerParams + mla.paramDelta,
    layer: { ...model.layer, full: model.layer.full + mla.keptDelta },
  };
}

/** Lower bounds of a step's time and its peak memory per GPU (see stepLowerBounds). */
export interface StepLowerBounds {
  readonly stepMs: number;
  readonly memoryBytes: number;
}

/**
 * Lower bounds of assembleStep(setup, machine, pricing)'s step time and peak memory, at a fraction
 * of its cost. Time: the busiest stage's compute, m · max_i Σ_c (forward + backward of chunk c on
 * stage i): the pipeline simulation runs a stage's ops one after another, so its span is at least
 * that, and the step adds the gradient sync's tail, the optimizer and the rest. Memory: the
 * heaviest stage's weights, optimizer state (its shard with the distributed optimizer) and
 * gradient buffer, live for the whole step under every peak.
 */
export function stepLowerBounds(setup: TrainingSetup, machine: Machine, pricing: LayerPricing): StepLowerBounds {
  const ct = chunkTimes(setup, machine, pricing);
  const { m, deg, split, model, forwardMs, backwardMs, moe, expertParams } = ct;
  let busiest = 0;
  split.layers.forEach((row, i) => {
    busiest = Math.max(
      busiest,
      row.reduce((a, _, ch) => a + forwardMs(i, ch) + backwardMs(i, ch), 0),
    );
  });
  const per = setupStateBytes(setup, machine.dtype, deg.dp * deg.cp);
  const perExpert = setupStateBytes(setup, machine.dtype, moe?.degrees.edp ?? 1);
  // Quantized parameters hold their copies (weightCopyBytes) in place of the 16-bit weights: the smaller of the two bounds both.
  const q = quantizedWeightsOf(setup, machine.kernels ?? defaultKernelOptions);
  const held = (w: number): number => (q?.params ? Math.min(w, weightCopyBytes(q.recipe)) : w);
  const memoryBytes = Math.max(
    ...model.stageParams.map(
      (p, i) =>
        p * (per.weights + per.optimizer + per.grads) -
        (q?.params ? stageLayerParams(ct, i) * (per.weights - held(per.weights)) : 0) +
        expertParams[i]!.reduce((a, x) => a + x, 0) * (held(perExpert.weights) + perExpert.optimizer + perExpert.grads),
    ),
  );
  return { stepMs: m * busiest, memoryBytes };
}

export type ChunkTimes = ReturnType<typeof computeChunkTimes>;

/**
 * The pipeline simulation's input for `setup`: p2p of the activation (or its gradient) across a
 * stage boundary, [s/(t·cp), b, h] with SP, [s/cp, b, h] without, on the boundary's link; a send
 * blocks its sender (1F1B) or runs beside its next op and slows it (overlap_p2p_comm).
 */
export function pipelineInput(setup: TrainingSetup, machine: Machine, ct: ChunkTimes) {
  const { system } = machine;
  const { c, deg, m, links, bytes, own, forwardMs, backwardMs } = ct;
  const p2pBytes = (own.tokens[1] - own.tokens[0]) * c.b * c.h * bytes;
  const p2pMs = deg.pp > 1 ? p2pUs(system, links.pp, p2pBytes) / 1e3 : 0;
  const p2pOverlapped = overlapsP2p(setup) && deg.pp > 1;
  const p2pLossMs = p2pOverlapped
    ? overlapLossMs(p2pMs, overlapSlowdown(false, system.gpu, p2pFootprint(links.pp.busGBps)))
    : 0;
  const startDelays = paramGatherStartDelays(setup, machine, ct);
  const pipeIn = {
    p: deg.pp,
    v: deg.vpp,
    m,
    forwardMs,
    backwardMs,
    p2pMs,
    ...(startDelays && {
      startDelayMs: (i: number) => startDelays[i]!.waitMs,
      startReadyMs: (i: number) => startDelays[i]!.readyMs,
    }),
  };
  return { pipeIn, senderBusyMs: p2pOverlapped ? p2pLossMs : p2pMs, p2pLossMs, p2pBlocks: !p2pOverlapped };
}

/**
 * Each stage's first forward under its parameter gather where the gather is part of the schedule
 * (dp-sync.ts gatherInSchedule: --overlap-param-gather with 1F1B and p > 1), else undefined:
 * paramGatherStart over the stage's buckets (gradBuckets of its one chunk) priced on the DP × CP
 * group's link, dispatched as the run's Megatron release does (megatron-release.ts).
 */
function paramGatherStartDelays(
  setup: TrainingSetup,
  machine: Machine,
  ct: ChunkTimes,
): { readonly readyMs: number; readonly waitMs: number }[] | undefined {
  const { deg, model, links, forwardMs, split } = ct;
  const o = dpOptionsOf(setup, deg);
  if (!gatherInSchedule(o, deg.pp)) return undefined;
  const dispatch = paramGatherDispatchOf(setup.megatronRelease ?? 'core_v0.19');
  const q = quantizedWeightsOf(setup, machine.kernels ?? defaultKernelOptions);
  return dpTailChunkParams(setup, model, split).map((row, i) => {
    const paramBytes = gatherBytesPerParam(q, machine, ct, i);
    const buckets = gradBuckets(row[0]!, {
      overlapGradReduce: o.overlapGradReduce,
      stage: i,
      chunk: 0,
      bucketSize: o.bucketSize,
    });
    const ms = gatherOrder(buckets).map(
      (params) =>
        bucketSyncUs(params, machine.dtype, true, o.dpGroup, links.dpCp, machine.system, undefined, paramBytes)
          .paramUs / 1e3,
    );
    return paramGatherStart(ms, forwardMs(i, 0), dispatch);
  });
}

/** The pipeline simulation's input and what p2p costs its senders (pipelineInput). */
export type P2pInput = ReturnType<typeof pipelineInput>;

/**
 * The stage model with each MoE layer's non-expert parameters (router, shared experts) in place of
 * the dense MLP's; the experts' own parameters are held apart (ChunkTimes.expertParams), sharded
 * over EP and ETP and reduced over expert-DP.
 */
function withMoeParams(model: StageModel, moe: MoeStepModel | undefined): StageModel {
  if (!moe) return model;
  const chunkParams = model.chunkParams.map((row, i) =>
    row.map((p, ch) => p + moe.layersPerChunk[i]![ch]! * moe.nonExpertParamDelta),
  );
  return { ...model, chunkParams, stageParams: chunkParams.map((row) => row.reduce((a, x) => a + x, 0)) };
}

/**
 * A chunk's activations with its n_moe MoE layers' change over the dense MLP (moe-step.ts
 * keptDelta: the routed rows × k in place of the dense FFN's): kept per micro-batch without
 * recomputation or with selective recomputation, less what the MoE submodules recomputed drop
 * (moeRecomputeOf: n_moe · dropped kept no more, the largest held again while its backward runs);
 * with full recomputation held only while a unit's backward runs, min(unit, n_moe) layers of it.
 */
function withMoeActivations(
  r: ChunkRecompute,
  moe: MoeStepModel | undefined,
  nMoe: number,
  rc: ReturnType<typeof recomputeOf>,
  mlpDropped?: number,
  redo?: ReturnType<typeof moeRecomputeOf>,
): ChunkRecompute {
  if (!moe || nMoe === 0) return r;
  if (rc?.granularity === 'full')
    return { ...r, backwardTransientBytes: r.backwardTransientBytes + Math.min(rc.layers, nMoe) * moe.keptDelta };
  // --recompute-modules mlp leaves MoE layers alone (transformer_layer.py:512-514): their MLP keeps what it keeps.
  const mlpBack = r.recomputedMlp ? Math.min(nMoe, r.recomputedMlp) : 0;
  const on = redo?.on === true;
  return {
    ...r,
    keptBytes: r.keptBytes + nMoe * moe.keptDelta + mlpBack * (mlpDropped ?? 0) - (on ? nMoe * redo.droppedBytes : 0),
    ...(on && {
      backwardTransientBytes: Math.max(r.backwardTransientBytes, redo.transientBytes),
      recomputedMoeModules: nMoe,
    }),
    ...(r.recomputedMlp !== undefined && { recomputedMlp: r.recomputedMlp - mlpBack }),
  };
}

/** The two norms' forward kernels of one layer on rank 0 (ops of weight g1, g2), ms: what layernorm recompute runs again. */
function normForwardMs(block: LayerPlan, t: Timeline): number {
  const norms = new Set(
    block.ops.filter((o) => o.phase === 'forward' && (o.weight === 'g1' || o.weight === 'g2')).map((o) => o.index),
  );
  return t.events.filter((e) => e.rank === 0 && norms.has(e.opIndex)).reduce((a, e) => a + (e.t1 - e.t0), 0);
}
