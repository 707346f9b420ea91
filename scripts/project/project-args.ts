import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parseSystemFile } from '../../src/calibrate/system-file.ts';
import { hfJobSizes, moeFromHf, parseHfConfig, type HfModel } from '../../src/megatron/hf-config.ts';
import { publicHfConfig, publicHfConfigs } from '../../src/megatron/hf-configs.ts';
import { parseDtype, trainDtypes, type TrainDtype } from '../../src/hardware/dtype.ts';
import { gpuNames, gpus } from '../../src/hardware/gpus.ts';
import { scenarios, seedsV100, type Scenario } from '../../src/megatron/scenarios.ts';
import { fabrics, parseSystem, systemNames, systems, withFabric, type SystemSpec } from '../../src/hardware/systems.ts';
import {
  attentionBackends,
  crossEntropyKernelChoices,
  cudaGraphImpls,
  defaultKernelOptions,
  fp8Formats,
  lowPrecisionRefusals,
  parseChoice,
  usesFlashAttention,
  type KernelOptions,
} from '../../src/projection/layer/kernel-options.ts';
import { layerArchs } from '../../src/megatron/layer-arch.ts';
import { fp4Formats, fp8Recipes } from '../../src/megatron/low-precision.ts';
import {
  defaultActivationOffload,
  offloadModuleNames,
  parseOffloadModules,
  parseOffloadTuning,
  type ActivationOffload,
  type OffloadTuning,
} from '../../src/megatron/activation-offload.ts';
import { parseRecomputeModules } from '../../src/megatron/recompute-modules.ts';
import { cudaGraphModuleNames, parseCudaGraphModules } from '../../src/megatron/cuda-graph-rules.ts';
import { fsdpFromFlags, shardingStrategies, type FsdpSetup } from '../../src/megatron/fsdp.ts';
import { cpCommTypes, type CpCommType, type CpExchange } from '../../src/megatron/cp-comm-type.ts';
import { quoted } from '../../src/core/quote.ts';
import {
  checkDataParallelFlags,
  type OptimizerCpuOffload,
  type Recompute,
  type TrainingSetup,
} from '../../src/megatron/training-setup.ts';
import {
  checkOptimizerCpuOffload,
  parseOptimizerOffloadFraction,
} from '../../src/projection/step/optimizer-offload.ts';
import { presets } from '../../src/parallel/config.ts';
import { parseDegrees, parsePreset, parseWhole } from '../../src/parallel/config-parse.ts';
import { sizeFlagOptions } from '../cli/size-flags.ts';
import { mlaOptions, mlaUsage, parseMlaFlags } from './mla-args.ts';
import { moeOptions, moeUsage, parseMoeFlags } from './moe-args.ts';

/** Size flags, as `npm run sweep` has them. */
const sizeFlags = ['s', 'b', 'h', 'heads', 'groups', 'ffn', 'vocab'] as const;

/** What `npm run project` runs: a machine, a dtype, the setup without t, and the degrees. */
export interface ProjectArgs {
  readonly help: boolean;
  readonly json: boolean;
  /** With --json: every stage's live memory intervals (class, bytes, t0, t1) per row. */
  readonly memoryTimeline: boolean;
  readonly system: SystemSpec;
  readonly dtype: TrainDtype;
  readonly setup: Omit<TrainingSetup, 'tp'>;
  readonly degrees: readonly number[];
  readonly scenario: Scenario;
  /** --export-job DIR: write the Megatron-LM job bundle of the setup (one --tp) there instead of projecting. */
  readonly exportJob?: string;
  /** How the projected job runs its kernels (Megatron's switches; defaults: kernel-options.ts). */
  readonly kernels: KernelOptions;
  /** Print the GEMM model's table for the system's GPU instead of projecting (--gemm-table). */
  readonly gemmTable: boolean;
  /** --search: run the advisor over every layout instead of the fixed-budget table. */
  readonly search: boolean;
  /** --top: rows the advisor prints. */
  readonly top: number;
  /** --topology (or --placement / --topo-file): print the node matrix, the placement and each link's load per t. */
  readonly topology: boolean;
  /** --placement NAME: megatron (default), tp-pp-dp, tp-switch, tp-sockets or custom:<GPU list>. */
  readonly placement: string;
  /** --topo-file FILE: the node's `nvidia-smi topo -m` output instead of the catalog's topology. */
  readonly topoFile?: string;
  /** --ablate: the overlap ablation of the setup at its one --tp instead of the fixed-budget table. */
  readonly ablate: boolean;
  /** --calibrate DIR: fit the system to the nccl-tests outputs and GEMM sweep in DIR, write its system file, project before and after. */
  readonly calibrate?: string;
  /** --hf-config FILE|NAME: the model read from a Hugging Face config.json (its sizes are the setup's). */
  readonly hfConfig?: { readonly from: string; readonly model: HfModel };
}

/**
 * The model of --hf-config: a built-in public config by name (hf-configs.ts) or a config.json file;
 * throws naming the built-ins when it is neither, and the reasons when the projection cannot price it.
 */
export function readHfConfigFlag(text: string): { from: string; model: HfModel } {
  const builtin = publicHfConfig(text);
  let model: HfModel;
  if (builtin) model = parseHfConfig({ ...builtin.config });
  else {
    let json: string;
    try {
      json = readFileSync(text, 'utf8');
    } catch (e) {
      throw new Error(
        `--hf-config ${text}: not a readable file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}) nor a built-in config (${publicHfConfigs.map((c) => c.name).join(', ')}).`,
        { cause: e },
      );
    }
    model = parseHfConfig(json);
  }
  if (model.cannotProject.length)
    throw new Error(
      `--hf-config ${text}: the projection cannot price this model yet: ${model.cannotProject.join(' ')}`,
    );
  return { from: builtin ? `${builtin.name} (${builtin.source})` : text, model };
}

/** The usage text: every flag, every system and GPU by name. */
export function usage(): string {
  const sys = systemNames.map((n) => `    ${n.padEnd(14)} ${systems[n].label}`).join('\n');
  const gpu = gpuNames.map((n) => `    ${n.padEnd(14)} ${gpus[n].label}`).join('\n');
  return `usage: npm run project -- [--scenario ${Object.keys(scenarios).join('|')}] [--system NAME] [--preset ${Object.keys(presets).join('|')}]
       [--s N --b N --h N --heads N --groups N --ffn N --vocab N] [--layers L] [--gpus N] [--tp 1,2,4,8]
       [--global-batch SEQUENCES] [--sp] [--dtype ${trainDtypes.join('|')}] [--recompute] [--no-overlap] [--json]
       [--pp P] [--vpp V | --num-layers-per-virtual-pipeline-stage N]
       [--decoder-first-pipeline-num-layers N] [--decoder-last-pipeline-num-layers N] [--cp CP [--cp-comm-type T]]
       [--use-distributed-optimizer] [--overlap-grad-reduce] [--overlap-param-gather] [--ddp-bucket-size PARAMS]
       [--use-megatron-fsdp [--data-parallel-sharding-strategy ${shardingStrategies.join('|')}]]
       [--use-torch-fsdp2 [--torch-fsdp2-no-reshard-after-forward]]
       [--optimizer-cpu-offload --use-precision-aware-optimizer [--optimizer-offload-fraction F] [--overlap-cpu-optimizer-d2h-h2d]]
       [--fine-grained-activation-offloading --offload-modules "${offloadModuleNames.join(' ')}"
        [--activation-offload-fraction F] [--min-offloaded-tensor-size ELEMENTS] [--delta-offload-bytes-across-pp-ranks BYTES]]
       [--recompute-granularity full|selective] [--recompute-method uniform|block] [--recompute-num-layers N]
       [--recompute-modules "core_attn mlp layernorm moe moe_act shared_experts mla_up_proj"]   (with selective; default core_attn)
       [--use-flash-attn] [--tied-embeddings | --untie-embeddings-and-output-weights] [--memory-timeline]
       [--export-job DIR]   (with one --tp: write the Megatron-LM job bundle instead, see docs/megatron-job.md)
       [--fabric ${Object.keys(fabrics).join('|')}] [--arch ${layerArchs.join('|')}] [--attention-backend ${attentionBackends.join('|')}]
       [--fp8-format ${fp8Formats.filter((f) => f !== 'none').join('|')} [--fp8-recipe ${fp8Recipes.join('|')}] [--fp8-param-gather]] [--fp4-format e2m1 [--fp4-recipe nvfp4] [--fp4-param-gather]]
       [--cuda-graph-impl ${cudaGraphImpls.join('|')} [--cuda-graph-modules "${cudaGraphModuleNames.join(' ')}"]] [--enable-cuda-graph]
       [--tp-comm-overlap] [--cross-entropy plan|megatron|megatron-fused|te-fused] [--gradient-accumulation-fusion] [--gemm-table]
       [--search [--top K]] [--ablate] [--no-overlap-p2p-communication] [--calibrate DIR]
       [--topology [--placement megatron|tp-pp-dp|tp-switch|tp-sockets|custom:<GPU list>] [--topo-file FILE]]
       [--hf-config FILE|${publicHfConfigs.map((c) => c.name).join('|')}]

Projects a training step of the layer × L onto a real cluster (no browser): per t at a fixed GPU budget
N = t × p × cp × DP, the step time, tokens/s, model TFLOP/s per GPU, model and executed MFU, the pipeline
bubble, exposed communication per group and the peak memory per GPU over the simulated schedule.
Megatron's spellings: --pipeline-model-parallel-size = --pp, --num-virtual-stages-per-pipeline-rank = --vpp,
--context-parallel-size = --cp (--cp-comm-type p2p|a2a|allgather|a2a+p2p, one for every layer; a2a+p2p with
--hierarchical-context-parallel-sizes A,R). --recompute is --recompute-granularity full --recompute-method uniform
--recompute-num-layers 1. Embeddings are untied unless --tied-embeddings (Megatron ties them unless
--untie-embeddings-and-output-weights; the scenarios keep them untied). With --json, --memory-timeline adds
every stage's live memory intervals (lifetime class, bytes, start and end in ms) per row.
Defaults come from the scenario (default ${seedsV100.name}: the seeds' tiny GPT on their 8×V100 PCIe box).
With --sp each row also shows the change against the same t without SP.
With --search the advisor enumerates t, p, v, cp, micro-batch, SP, recompute, distributed optimizer and
the overlaps for the model on N GPUs at the global batch (the size flags' b is ignored: the micro-batch is
searched), counts each rejected layout by reason, and prints the K fastest (default 10) with memory and MFU.
With --ablate (one --tp) every overlap the projection prices (async dgrad all-reduce, SP re-gather, --tp-comm-overlap,
--overlap-grad-reduce, --overlap-param-gather, p2p overlap) is tried alone, in pairs and all on: step, exposed
communication per group, memory the overlaps hold, and each combination slower than its best subset flagged
(docs/overlap-ablation.md). Pipeline sends overlap compute only in the interleaved schedule (v > 1), as in
Megatron; --no-overlap-p2p-communication makes them block there too.

--hf-config reads the model from a Hugging Face config.json (Llama, Mistral, Qwen2, Qwen3, Mixtral, Qwen3-MoE and
DeepSeek-V3 field names: hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads, intermediate_size,
vocab_size, tie_word_embeddings, rope_theta; the experts' and multi-latent attention's fields fill the MoE and MLA
flags not given) or takes a built-in public config by name; size flags and --layers given beside it win.

Kernels (Megatron-LM core_v0.19.0 spellings; docs/projection-kernels.md has the models and sources):
  --arch gpt|llama          llama (default): the playground's layer (RMSNorm, SwiGLU, RoPE, no biases, no dropout);
                            gpt: Megatron's defaults (LayerNorm, GeLU MLP of two GEMMs, learned positions, biases,
                            dropout 0.1), priced as a transform of the same plan.
  --attention-backend B     auto (default, Megatron's: fused on Hopper and newer, flash on Ampere, unfused on Volta),
                            unfused (s×s scores and softmax in HBM), flash or fused (one FlashAttention kernel per
                            pass; Ampere or newer).
  --fp8-format F            hybrid or e4m3: the linear layers' GEMMs in fp8 (H100, H200, B200, GB200), with casts.
  --fp8-recipe R            delayed (default), tensorwise, blockwise (Hopper and newer) or mxfp8 (Blackwell): the
                            casts' scaling work per element (docs/projection-memory-levers.md).
  --fp8-param-gather        the linear layers' parameters held in fp8 (no 16-bit copy; needs the distributed optimizer):
                            their all-gather at 1 byte per element (mxfp8: 2, the bf16 view Megatron gathers).
  --fp4-param-gather        the same in NVFP4 under --fp4-format e2m1: the all-gather at ½ byte per element.
  --fp4-format e2m1         NVFP4 (--fp4-recipe nvfp4): the linear layers' GEMMs at Blackwell's fp4 rate, with
                            the amax, Hadamard-transform and casts' passes.
  --cuda-graph-impl I       none (default: eager, ~10 µs host dispatch per kernel), local, transformer_engine or
                            full_iteration: kernels replayed from CUDA graphs, no host dispatch.
  --cuda-graph-modules M    the per-layer capture scope (--cuda-graph-scope is Megatron's hidden old spelling);
                            Megatron's asserts on it are checked; priced: full (the whole layer, the default), and
                            attn and mlp of dense layers under transformer_engine.
  --enable-cuda-graph       Megatron's deprecated spelling of --cuda-graph-impl local.
  --tp-comm-overlap         TP all-gathers and reduce-scatters in chunks under the GEMMs (needs --sp), priced with
                            the SMs and HBM bandwidth the communication takes from them.
  --cross-entropy K         plan (default: the playground's vocab-parallel cross entropy, logits read in 16 bits) or
                            megatron (Megatron's unfused default: logits upcast to fp32, each pass in fp32) or
                            megatron-fused (--cross-entropy-loss-fusion: the fused passes, 28 bytes per logit in
                            bf16 against 52) or te-fused (--cross-entropy-fusion-impl te: Transformer Engine's
                            kernels, 22 bytes per logit; Megatron-LM's training refuses it at core_v0.19.0,
                            arguments.py:1642-1647, for stability: a what-if for Megatron Core loops of one's own).
  --gradient-accumulation-fusion  each linear wgrad GEMM accumulates into the main_grad buffer (fp32 under bf16),
                            as Megatron's training does unless --no-gradient-accumulation-fusion; default: the plan's
                            wgrad, written once in 16 bits.
  --fabric NAME             replace the system's scale-out network (same NIC count): ${Object.keys(fabrics).join(', ')}.
  --gemm-table              print the GEMM model's times for representative shapes on the system's GPU and exit.

Topology (docs/topology.md):
  --topology                print the node's GPU matrix (nvidia-smi path kinds, sockets, switches, NICs), then per t
                            the placement's group rings (slowest hop, shared links), the step on them and each
                            physical link's load per step (bytes, calls, exposed bytes by group); with --json
                            the node, and per t the placed links, the volumes and every link's load.
  --placement NAME          megatron (default: tp-cp-ep-dp-pp, rank r on GPU r), tp-pp-dp (--use-tp-pp-dp-mapping),
                            tp-switch (TP under one PCIe switch), tp-sockets (TP across sockets), or
                            custom:<GPU list> (local rank i on the i-th GPU listed). Implies --topology.
  --topo-file FILE          read the node from FILE, the output of nvidia-smi topo -m. Implies --topology.

Calibration (docs/calibrate.md):
  --calibrate DIR           fit the system to DIR's nccl-tests outputs (*.txt, *.log, *.out: all_reduce_perf,
                            all_gather_perf, reduce_scatter_perf, sendrecv_perf, alltoall_perf) and the job bundle's
                            gemm-sweep.csv; write DIR/calibrated-system.json and print the projection before and after.
  --system file:PATH        a system file (written by --calibrate, or edited by hand).

${moeUsage}

${mlaUsage}

systems (--system, or custom:<gpu>:<GPUs per node>:<α µs>:<GB/s>, or file:PATH):
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
  pp: { type: 'string' },
  'pipeline-model-parallel-size': { type: 'string' },
  vpp: { type: 'string' },
  'num-virtual-stages-per-pipeline-rank': { type: 'string' },
  'num-layers-per-virtual-pipeline-stage': { type: 'string' },
  'decoder-first-pipeline-num-layers': { type: 'string' },
  'decoder-last-pipeline-num-layers': { type: 'string' },
  cp: { type: 'string' },
  'context-parallel-size': { type: 'string' },
  'cp-comm-type': { type: 'string' },
  'hierarchical-context-parallel-sizes': { type: 'string' },
  'use-distributed-optimizer': { type: 'boolean', default: false },
  'overlap-grad-reduce': { type: 'boolean', default: false },
  'overlap-param-gather': { type: 'boolean', default: false },
  'fp8-param-gather': { type: 'boolean', default: false },
  'fp4-param-gather': { type: 'boolean', default: false },
  'ddp-bucket-size': { type: 'string' },
  'optimizer-cpu-offload': { type: 'boolean', default: false },
  'optimizer-offload-fraction': { type: 'string' },
  'fine-grained-activation-offloading': { type: 'boolean', default: false },
  'offload-modules': { type: 'string' },
  'activation-offload-fraction': { type: 'string' },
  'min-offloaded-tensor-size': { type: 'string' },
  'delta-offload-bytes-across-pp-ranks': { type: 'string' },
  'overlap-cpu-optimizer-d2h-h2d': { type: 'boolean', default: false },
  'use-precision-aware-optimizer': { type: 'boolean', default: false },
  'use-megatron-fsdp': { type: 'boolean', default: false },
  'data-parallel-sharding-strategy': { type: 'string' },
  'use-torch-fsdp2': { type: 'boolean', default: false },
  'torch-fsdp2-no-reshard-after-forward': { type: 'boolean', default: false },
  'recompute-granularity': { type: 'string' },
  'recompute-method': { type: 'string' },
  'recompute-num-layers': { type: 'string' },
  'recompute-modules': { type: 'string' },
  'use-flash-attn': { type: 'boolean', default: false },
  'tied-embeddings': { type: 'boolean', default: false },
  'untie-embeddings-and-output-weights': { type: 'boolean', default: false },
  json: { type: 'boolean', default: false },
  'memory-timeline': { type: 'boolean', default: false },
  'export-job': { type: 'string' },
  search: { type: 'boolean', default: false },
  ablate: { type: 'boolean', default: false },
  'no-overlap-p2p-communication': { type: 'boolean', default: false },
  top: { type: 'string' },
  help: { type: 'boolean', default: false },
  fabric: { type: 'string' },
  arch: { type: 'string' },
  'attention-backend': { type: 'string' },
  'fp8-format': { type: 'string' },
  'fp8-recipe': { type: 'string' },
  'fp4-format': { type: 'string' },
  'fp4-recipe': { type: 'string' },
  'cuda-graph-impl': { type: 'string' },
  'cuda-graph-modules': { type: 'string' },
  'cuda-graph-scope': { type: 'string' },
  'enable-cuda-graph': { type: 'boolean', default: false },
  'tp-comm-overlap': { type: 'boolean', default: false },
  'cross-entropy': { type: 'string' },
  'gradient-accumulation-fusion': { type: 'boolean', default: false },
  'gemm-table': { type: 'boolean', default: false },
  topology: { type: 'boolean', default: false },
  placement: { type: 'string' },
  'topo-file': { type: 'string' },
  calibrate: { type: 'string' },
  ...moeOptions,
  ...mlaOptions,
  'hf-config': { type: 'string' },
} as const;

/** Parses `npm run project` arguments; throws an Error whose message says what to change. */
export function parseProjectArgs(argv: readonly string[]): ProjectArgs {
  const { values: v, positionals } = parseArgs({ args: [...argv], options, allowPositionals: true, strict: true });
  if (positionals.length) throw new Error(`unexpected argument "${positionals[0]}": every setting is a --flag.`);
  const name = v.scenario ?? seedsV100.name;
  const scenario = scenarios[name];
  if (!scenario) throw new Error(`unknown scenario "${name}": use ${Object.keys(scenarios).join(', ')}.`);
  const base = scenario.setup;
  if (v['hf-config'] !== undefined && v.preset !== undefined)
    throw new Error('--hf-config and --preset both set the model: give one.');
  const hf = v['hf-config'] !== undefined ? readHfConfigFlag(v['hf-config']) : undefined;
  const sizes = {
    ...(v.preset !== undefined ? presets[parsePreset(v.preset)] : base.sizes),
    // A config names no s or b: Megatron-LM's Mixtral example's (hfJobDefaults), as the page has them.
    ...(hf && hfJobSizes(hf.model)),
    ...hf?.model.model.sizes,
  };
  for (const f of sizeFlags) {
    const text = v[f];
    if (text !== undefined) sizes[f] = parseWhole(`--${f}`, text, f === 'vocab' ? 0 : 1);
  }
  const layers = v.layers !== undefined ? parseWhole('--layers', v.layers, 1) : (hf?.model.model.layers ?? base.layers);
  const pp = oneOf(v, 'pp', 'pipeline-model-parallel-size') ?? base.pp ?? 1;
  const cp = oneOf(v, 'cp', 'context-parallel-size') ?? base.cp ?? 1;
  const first = optWhole(v['decoder-first-pipeline-num-layers'], '--decoder-first-pipeline-num-layers', 0);
  const last = optWhole(v['decoder-last-pipeline-num-layers'], '--decoder-last-pipeline-num-layers', 0);
  const vpp = virtualStages(v, layers, pp, first !== undefined || last !== undefined) ?? base.vpp ?? 1;
  if (v['tied-embeddings'] && v['untie-embeddings-and-output-weights'])
    throw new Error('--tied-embeddings and --untie-embeddings-and-output-weights contradict each other: choose one.');
  const bucket = optWhole(v['ddp-bucket-size'], '--ddp-bucket-size', 1);
  const setup: Omit<TrainingSetup, 'tp'> = {
    ...base,
    sizes,
    sp: v.sp,
    layers,
    gpus: v.gpus !== undefined ? parseWhole('--gpus', v.gpus, 1) : base.gpus,
    globalBatch:
      v['global-batch'] !== undefined ? parseWhole('--global-batch', v['global-batch'], 1) : base.globalBatch,
    overlap: !v['no-overlap'],
    recompute: v.recompute || (base.recompute ?? false),
    pp,
    vpp,
    cp,
    ...(first !== undefined && { firstStageLayers: first }),
    ...(last !== undefined && { lastStageLayers: last }),
    distributedOptimizer: v['use-distributed-optimizer'] || (base.distributedOptimizer ?? false),
    overlapGradReduce: v['overlap-grad-reduce'] || (base.overlapGradReduce ?? false),
    overlapParamGather: v['overlap-param-gather'] || (base.overlapParamGather ?? false),
    ...(bucket !== undefined && { bucketSize: bucket }),
    ...(v['fp8-param-gather'] && { fp8ParamGather: true }),
    ...(v['fp4-param-gather'] && { fp4ParamGather: true }),
    tiedEmbeddings:
      v['tied-embeddings'] ||
      (!v['untie-embeddings-and-output-weights'] && (hf?.model.tiedEmbeddings ?? base.tiedEmbeddings ?? false)),
    flashAttention: v['use-flash-attn'] || (base.flashAttention ?? false),
    ...(v['no-overlap-p2p-communication'] && { overlapP2pComm: false }),
  };
  const cpExchange = parseCpExchange(v['cp-comm-type'], v['hierarchical-context-parallel-sizes']);
  if (cpExchange) Object.assign(setup, { cpExchange });
  // --hf-config's experts (moeFromHf) fill the MoE flags not given; --num-experts replaces them.
  const moe = parseMoeFlags(v, sizes.ffn, hf?.model.moe && moeFromHf(hf.model.moe, hf.model.model.layers));
  if (moe) Object.assign(setup, { moe });
  const mla = parseMlaFlags(v, hf?.model);
  if (mla) Object.assign(setup, { mla });
  const fsdp = parseFsdpFlags(v);
  if (fsdp) Object.assign(setup, { fsdp });
  const offload = parseOffloadFlags(v);
  if (offload) Object.assign(setup, { optimizerCpuOffload: offload });
  const activationOffload = parseActivationOffloadFlags(v);
  if (activationOffload) Object.assign(setup, { activationOffload });
  const base0 = systemOf(v.system ?? scenario.system);
  const system = v.fabric !== undefined ? withFabric(base0, v.fabric) : base0;
  let kernels = parseKernelFlags(v, setup.sp);
  // One switch, two effects: --use-flash-attn (Megatron's older spelling of flash) and
  // --attention-backend flash|fused, or auto where it resolves to them on this GPU, price
  // FlashAttention's time (kernels) and drop the s×s activations (setup).
  if (setup.flashAttention) {
    if (v['attention-backend'] === undefined) kernels = { ...kernels, attentionBackend: 'flash' };
    else if (!usesFlashAttention(kernels, system.gpu.arch))
      throw new Error(`--use-flash-attn contradicts --attention-backend ${v['attention-backend']}: give one.`);
  }
  if (usesFlashAttention(kernels, system.gpu.arch)) Object.assign(setup, { flashAttention: true });
  if (kernels.fp8 !== 'none' && system.gpu.peakTflops.fp8 === undefined)
    throw new Error(
      `--fp8-format ${kernels.fp8}: ${system.gpu.label} has no fp8 tensor cores; choose an H100, H200, B200 or GB200 system.`,
    );
  const lowPrecision = lowPrecisionRefusals(kernels, system.gpu.arch);
  if (lowPrecision.length) throw new Error(`${lowPrecision.join(' ')} (${system.gpu.label})`);
  if (usesFlashAttention(kernels, system.gpu.arch) && system.gpu.arch === 'volta')
    throw new Error(
      `FlashAttention (--attention-backend ${kernels.attentionBackend}, --use-flash-attn) needs an Ampere or newer GPU, not ${system.gpu.label}; use --attention-backend unfused.`,
    );
  const recomputation = recomputeFlags(v, v.recompute);
  if (recomputation) Object.assign(setup, { recomputation });
  checkDataParallelFlags(setup, {
    fp16: (v.dtype !== undefined ? parseDtype(v.dtype) : scenario.dtype) === 'fp16',
    gradAccumulationFusion: kernels.gradAccumulationFusion ?? false,
  });
  return {
    help: v.help,
    json: v.json,
    memoryTimeline: v['memory-timeline'],
    gemmTable: v['gemm-table'],
    kernels,
    system,
    dtype: v.dtype !== undefined ? parseDtype(v.dtype) : scenario.dtype,
    setup,
    degrees: v.tp !== undefined ? parseDegrees(v.tp) : scenario.degrees,
    scenario,
    ...(v['export-job'] !== undefined && { exportJob: v['export-job'] }),
    search: v.search,
    ablate: v.ablate,
    top: v.top !== undefined ? parseWhole('--top', v.top, 1) : 10,
    topology: v.topology || v.placement !== undefined || v['topo-file'] !== undefined,
    placement: v.placement ?? 'megatron',
    ...(v['topo-file'] !== undefined && { topoFile: v['topo-file'] }),
    ...(v.calibrate !== undefined && { calibrate: v.calibrate }),
    ...(hf && { hfConfig: hf }),
  };
}

/** A catalog or custom system (systems.ts parseSystem), or file:PATH, a system file (src/calibrate/system-file.ts). */
function systemOf(text: string): SystemSpec {
  if (!text.startsWith('file:')) return parseSystem(text);
  const path = text.slice('file:'.length);
  let body: string;
  try {
    body = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(
      `--system file:${path}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}).`,
      { cause: e },
    );
  }
  return parseSystemFile(body, `--system file:${path}`);
}

/** The kernel switches from their flags, Megatron's rules checked (--enable-cuda-graph vs --cuda-graph-impl; --tp-comm-overlap needs --sp). */
function parseKernelFlags(
  v: {
    arch?: string;
    'attention-backend'?: string;
    'fp8-format'?: string;
    'fp8-recipe'?: string;
    'fp4-format'?: string;
    'fp4-recipe'?: string;
    'cuda-graph-impl'?: string;
    'cuda-graph-modules'?: string;
    'cuda-graph-scope'?: string;
    'enable-cuda-graph': boolean;
    'tp-comm-overlap': boolean;
    'cross-entropy'?: string;
    'gradient-accumulation-fusion': boolean;
  },
  sp: boolean,
): KernelOptions {
  const d = defaultKernelOptions;
  if (v['enable-cuda-graph'] && v['cuda-graph-impl'] !== undefined)
    throw new Error('--enable-cuda-graph is the old spelling of --cuda-graph-impl local: give one of them, not both.');
  // arguments.py:615-622: the hidden alias and the flag are exclusive; :1888-1890 no scope with full_iteration.
  if (v['cuda-graph-scope'] !== undefined && v['cuda-graph-modules'] !== undefined)
    throw new Error(
      '--cuda-graph-scope and --cuda-graph-modules cannot be used together (arguments.py:615-618): --cuda-graph-scope is the old spelling, give --cuda-graph-modules.',
    );
  const graphScope = v['cuda-graph-modules'] ?? v['cuda-graph-scope'];
  const cudaGraphModules = graphScope !== undefined ? parseCudaGraphModules(graphScope) : [];
  if (v['tp-comm-overlap'] && !sp)
    throw new Error(
      '--tp-comm-overlap needs --sp: Megatron overlaps TP communication only under sequence parallelism.',
    );
  if (v['fp8-recipe'] !== undefined && v['fp8-format'] === undefined)
    throw new Error('--fp8-recipe chooses the scaling of --fp8-format: give --fp8-format hybrid or e4m3 with it.');
  if (v['fp4-recipe'] !== undefined) {
    parseChoice('--fp4-recipe', v['fp4-recipe'], ['nvfp4'] as const);
    if (v['fp4-format'] === undefined)
      throw new Error('--fp4-recipe chooses the scaling of --fp4-format: give --fp4-format e2m1 with it.');
  }
  const fp4 = v['fp4-format'] !== undefined ? parseChoice('--fp4-format', v['fp4-format'], fp4Formats) : 'none';
  return {
    layerArch: v.arch !== undefined ? parseChoice('--arch', v.arch, layerArchs) : d.layerArch,
    attentionBackend:
      v['attention-backend'] !== undefined
        ? parseChoice('--attention-backend', v['attention-backend'], attentionBackends)
        : d.attentionBackend,
    fp8: v['fp8-format'] !== undefined ? parseChoice('--fp8-format', v['fp8-format'], fp8Formats) : d.fp8,
    ...(v['fp8-recipe'] !== undefined && { fp8Recipe: parseChoice('--fp8-recipe', v['fp8-recipe'], fp8Recipes) }),
    ...(fp4 !== 'none' && { fp4 }),
    cudaGraphImpl: v['enable-cuda-graph']
      ? 'local'
      : v['cuda-graph-impl'] !== undefined
        ? parseChoice('--cuda-graph-impl', v['cuda-graph-impl'], cudaGraphImpls)
        : d.cudaGraphImpl,
    ...(cudaGraphModules.length && { cudaGraphModules }),
    tpCommOverlap: v['tp-comm-overlap'],
    ...(v['cross-entropy'] !== undefined && {
      crossEntropy: parseChoice('--cross-entropy', v['cross-entropy'], crossEntropyKernelChoices),
    }),
    ...(v['gradient-accumulation-fusion'] && { gradAccumulationFusion: true }),
  };
}

type Values = ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true; strict: true }>>['values'];

/** A whole number flag that may be absent. */
function optWhole(text: string | undefined, flag: string, min: number): number | undefined {
  return text === undefined ? undefined : parseWhole(flag, text, min);
}

/** A degree given by its short or its Megatron spelling (not both). */
/** --cp-comm-type and --hierarchical-context-parallel-sizes (cp-comm-type.ts); undefined when neither is given. */
function parseCpExchange(type: string | undefined, sizes: string | undefined): CpExchange | undefined {
  if (type === undefined && sizes === undefined) return undefined;
  const t = type ?? 'p2p';
  if (!(cpCommTypes as readonly string[]).includes(t))
    throw new Error(
      `--cp-comm-type ${quoted(t)} is not one of ${cpCommTypes.join(', ')} (one type for every layer; per-layer lists are not priced).`,
    );
  if (sizes === undefined) return { type: t as CpCommType };
  const parts = sizes.split(',').map((x) => x.trim());
  const ns = parts.map((x) => Number(x));
  if (ns.length !== 2 || !ns.every((n) => Number.isInteger(n) && n >= 1))
    throw new Error(
      `--hierarchical-context-parallel-sizes ${quoted(sizes)} must be two whole numbers ≥ 1, inner a2a then outer ring, e.g. 2,4.`,
    );
  return { type: t as CpCommType, hierarchical: [ns[0]!, ns[1]!] };
}

function oneOf(
  v: Values,
  short: 'pp' | 'cp',
  long: 'pipeline-model-parallel-size' | 'context-parallel-size',
): number | undefined {
  if (v[short] !== undefined && v[long] !== undefined)
    throw new Error(`--${short} and --${long} are the same setting: give one.`);
  const text = v[short] ?? v[long];
  return text === undefined ? undefined : parseWhole(`--${short}`, text, 1);
}

/**
 * v from --vpp / --num-virtual-stages-per-pipeline-rank, or from --num-layers-per-virtual-pipeline-stage
 * (v = (L/p)/n, Megatron's arguments.py: not with uneven first/last stages).
 */
function virtualStages(v: Values, layers: number, pp: number, uneven: boolean): number | undefined {
  const given = [v.vpp, v['num-virtual-stages-per-pipeline-rank'], v['num-layers-per-virtual-pipeline-stage']].filter(
    (x) => x !== undefined,
  );
  if (given.length > 1)
    throw new Error(
      'give one of --vpp, --num-virtual-stages-per-pipeline-rank, --num-layers-per-virtual-pipeline-stage.',
    );
  const stages = v.vpp ?? v['num-virtual-stages-per-pipeline-rank'];
  if (stages !== undefined) return parseWhole('--vpp', stages, 1);
  const per = v['num-layers-per-virtual-pipeline-stage'];
  if (per === undefined) return undefined;
  const n = parseWhole('--num-layers-per-virtual-pipeline-stage', per, 1);
  if (uneven)
    throw new Error(
      'with uneven first/last stages give --num-virtual-stages-per-pipeline-rank, not --num-layers-per-virtual-pipeline-stage.',
    );
  if (layers % pp !== 0 || (layers / pp) % n !== 0)
    throw new Error(
      `--num-layers-per-virtual-pipeline-stage ${n} must divide the ${layers}/${pp} layers of each stage.`,
    );
  return layers / pp / n;
}

/** The recompute policy of the --recompute-* flags, with Megatron's checks (transformer_config.py). */
function recomputeFlags(v: Values, legacy: boolean): Recompute | undefined {
  const g = v['recompute-granularity'];
  const method = v['recompute-method'];
  const n = v['recompute-num-layers'];
  const modules = v['recompute-modules'];
  if (modules !== undefined && g !== 'selective')
    throw new Error(
      '--recompute-modules applies with --recompute-granularity selective (transformer_layer.py reads it only there): add it.',
    );
  if (g === undefined) {
    if (method !== undefined || n !== undefined)
      throw new Error('--recompute-method and --recompute-num-layers need --recompute-granularity full.');
    return undefined;
  }
  if (legacy) throw new Error('--recompute is --recompute-granularity full; give one of them.');
  if (g === 'selective') {
    if (method !== undefined || n !== undefined)
      throw new Error('--recompute-granularity selective takes no --recompute-method or --recompute-num-layers.');
    return { granularity: 'selective', ...(modules !== undefined && { modules: parseRecomputeModules(modules) }) };
  }
  if (g !== 'full') throw new Error(`--recompute-granularity must be full or selective, got "${g}".`);
  if (method !== 'uniform' && method !== 'block')
    throw new Error('--recompute-granularity full needs --recompute-method uniform or block.');
  if (n === undefined) throw new Error('--recompute-granularity full needs --recompute-num-layers N.');
  return { granularity: 'full', method, layers: parseWhole('--recompute-num-layers', n, 1) };
}

/**
 * FSDP from the flags (fsdp.ts fsdpFromFlags): --use-megatron-fsdp with
 * --data-parallel-sharding-strategy (default optim_grads_params), or --use-torch-fsdp2 with
 * --torch-fsdp2-no-reshard-after-forward; a strategy or FSDP2 option without its switch is refused.
 */
function parseFsdpFlags(v: {
  readonly 'use-megatron-fsdp': boolean;
  readonly 'data-parallel-sharding-strategy'?: string;
  readonly 'use-torch-fsdp2': boolean;
  readonly 'torch-fsdp2-no-reshard-after-forward': boolean;
}): FsdpSetup | undefined {
  if (v['data-parallel-sharding-strategy'] !== undefined && !v['use-megatron-fsdp'])
    throw new Error('--data-parallel-sharding-strategy is a Megatron-FSDP option: add --use-megatron-fsdp.');
  if (v['torch-fsdp2-no-reshard-after-forward'] && !v['use-torch-fsdp2'])
    throw new Error('--torch-fsdp2-no-reshard-after-forward is an FSDP2 option: add --use-torch-fsdp2.');
  const flags: Record<string, string | true | undefined> = {
    '--use-megatron-fsdp': v['use-megatron-fsdp'] || undefined,
    '--data-parallel-sharding-strategy': v['data-parallel-sharding-strategy'],
    '--use-torch-fsdp2': v['use-torch-fsdp2'] || undefined,
    '--torch-fsdp2-no-reshard-after-forward': v['torch-fsdp2-no-reshard-after-forward'] || undefined,
  };
  return fsdpFromFlags((name) => flags[name]);
}

/** --fine-grained-activation-offloading with --offload-modules and its tuning flags (Megatron's defaults otherwise). */
function parseActivationOffloadFlags(v: {
  readonly 'fine-grained-activation-offloading': boolean;
  readonly 'offload-modules'?: string;
  readonly 'activation-offload-fraction'?: string;
  readonly 'min-offloaded-tensor-size'?: string;
  readonly 'delta-offload-bytes-across-pp-ranks'?: string;
}): ActivationOffload | undefined {
  const delta = v['delta-offload-bytes-across-pp-ranks'];
  const tuning = [v['offload-modules'], v['activation-offload-fraction'], v['min-offloaded-tensor-size'], delta];
  if (!v['fine-grained-activation-offloading']) {
    if (tuning.some((x) => x !== undefined))
      throw new Error(
        '--offload-modules, --activation-offload-fraction, --min-offloaded-tensor-size and --delta-offload-bytes-across-pp-ranks need --fine-grained-activation-offloading.',
      );
    return undefined;
  }
  const value = (k: OffloadTuning, text: string | undefined): number =>
    text === undefined ? defaultActivationOffload[k] : parseOffloadTuning(k, text);
  return {
    modules: parseOffloadModules(v['offload-modules'] ?? ''),
    fraction: value('fraction', v['activation-offload-fraction']),
    minTensorElements: value('minTensorElements', v['min-offloaded-tensor-size']),
    deltaBytesPerPpRank: value('deltaBytesPerPpRank', delta),
  };
}

/**
 * --optimizer-cpu-offload with its fraction (Megatron's default 1.0, arguments.py:2785) and overlap;
 * Megatron's rule that it needs --use-precision-aware-optimizer (optimizer-offload.ts).
 */
function parseOffloadFlags(v: {
  readonly 'optimizer-cpu-offload': boolean;
  readonly 'optimizer-offload-fraction'?: string;
  readonly 'overlap-cpu-optimizer-d2h-h2d': boolean;
  readonly 'use-precision-aware-optimizer': boolean;
}): OptimizerCpuOffload | undefined {
  if (!v['optimizer-cpu-offload']) {
    if (v['optimizer-offload-fraction'] !== undefined || v['overlap-cpu-optimizer-d2h-h2d'])
      throw new Error('--optimizer-offload-fraction and --overlap-cpu-optimizer-d2h-h2d need --optimizer-cpu-offload.');
    return undefined;
  }
  const text = v['optimizer-offload-fraction'];
  const fraction = text === undefined ? 1 : parseOptimizerOffloadFraction(text);
  const o = { fraction, overlapD2hH2d: v['overlap-cpu-optimizer-d2h-h2d'] };
  checkOptimizerCpuOffload(o, v['use-precision-aware-optimizer']);
  return o;
}
