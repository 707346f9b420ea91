import type { TrainDtype } from '../hardware/dtype.ts';
import type { LayerConfig } from '../parallel/config.ts';
import { moeArgv, type MoeSetup } from './moe.ts';

/**
 * The Megatron-LM release the launch command is written for, and checked against
 * (tests/fixtures/megatron-flags.json lists every flag of that release, extracted from its
 * megatron/training/arguments.py and the config dataclasses it turns into flags, by
 * scripts/repo/megatron-flags.py).
 */
export const megatronRelease = { tag: 'core_v0.19.0', commit: '5be9626709af2722333bf54797c954c09edeada3' } as const;

/*
 * Flag spellings and behaviour read at core_v0.19.0: megatron/training/arguments.py
 * (_add_network_size_args builds the TransformerConfig fields as flags: --hidden-size,
 * --num-query-groups, --normalization, --sequence-parallel, …; --group-query-attention,
 * --swiglu, --untie-embeddings-and-output-weights, --make-vocab-size-divisible-by (default 128)
 * are literal), megatron/training/config/training_config.py (TrainingConfig: --train-iters,
 * --micro-batch-size, --global-batch-size; SchedulerConfig; TokenizerConfig: --tokenizer-type,
 * --vocab-size), megatron/core/tokenizers/text/libraries/null_tokenizer.py (NullTokenizer:
 * vocab_size = --vocab-size, EOD = V − 1, no extra id), megatron/training/vocab_utils.py
 * (V_p = ⌈V / (divisible-by · t)⌉ · divisible-by · t), gpt_builders.py (--transformer-impl local →
 * get_gpt_layer_local_spec, transformer_engine → get_gpt_layer_with_transformer_engine_spec).
 * Without --bf16 or --fp16 Megatron keeps parameters and math in float32, as the playground does.
 *
 * Which layer spec: the local spec's norms are WrappedTorchNorm when --normalization RMSNorm
 * (models/backends.py:118-127 LocalSpecProvider.layer_norm), which asserts
 * not persist_layer_norm and not sequence_parallel (transformer/torch_norm.py:48, :50);
 * persist_layer_norm is on unless --no-persist-layer-norm (argument_utils.py:304). So the command
 * always carries --no-persist-layer-norm, and under SP uses the Transformer Engine spec, whose
 * norms are fused into TELayerNormColumnParallelLinear and TENorm. The final norm is TENorm when
 * Transformer Engine is installed, else FusedLayerNorm with Apex (which rejects RMSNorm,
 * fusions/fused_layer_norm.py:66), else WrappedTorchNorm (transformer/transformer_block.py:53-64):
 * the job needs Transformer Engine installed, or neither it nor Apex (megatron-check.ts replays
 * all of this).
 */

/** One flag and its value (argv form). */
const a = (flag: string, value?: number | string): string[] => (value === undefined ? [flag] : [flag, String(value)]);

/** Training steps of the emitted command: a few, to see the loss move; the playground runs one. */
export const megatronTrainIters = 10;
/** Learning rate of the emitted command (Adam, constant schedule). */
export const megatronLr = 1e-4;

/** The layer spec Megatron builds for a configuration: local without SP, Transformer Engine with it (see above). */
export function transformerImpl(c: Pick<LayerConfig, 'tp' | 'sp'>): 'local' | 'transformer_engine' {
  return c.sp && c.tp > 1 ? 'transformer_engine' : 'local';
}

/** How a job runs the layer: depth, batch, precision, recompute, steps; the playground's export is one fp32 layer, one step's batch. */
export interface MegatronRun {
  /** --num-layers. */
  readonly layers: number;
  /** --global-batch-size (sequences per step over all data-parallel replicas). */
  readonly globalBatch: number;
  readonly dtype: TrainDtype;
  /** Full recompute, uniform, one layer per checkpoint. */
  readonly recompute: boolean;
  readonly trainIters: number;
}

/** The run of the playground's own export: one layer, DP 1 (global batch = micro-batch), fp32, megatronTrainIters steps. */
export function playgroundRun(c: LayerConfig): MegatronRun {
  return { layers: 1, globalBatch: c.b, dtype: 'fp32', recompute: false, trainIters: megatronTrainIters };
}

/**
 * Model, parallel layout, tokenizer and precision flags (everything but data, schedule and
 * profiler). Vocabulary V > 0: --tokenizer-type NullTokenizer --vocab-size V
 * --make-vocab-size-divisible-by 1, so Megatron pads to ⌈V/t⌉·t as the playground does.
 */
export function megatronModelArgs(c: LayerConfig, run: MegatronRun = playgroundRun(c)): string[] {
  const t = c.tp;
  return [
    ...a('--tensor-model-parallel-size', t),
    ...(c.sp && t > 1 ? a('--sequence-parallel') : []),
    ...a('--transformer-impl', transformerImpl(c)),
    ...a('--num-layers', run.layers),
    ...a('--hidden-size', c.h),
    ...a('--ffn-hidden-size', c.ffn),
    ...a('--num-attention-heads', c.heads),
    ...(c.groups < c.heads ? [...a('--group-query-attention'), ...a('--num-query-groups', c.groups)] : []),
    ...(c.kvChannels !== undefined ? a('--kv-channels', c.kvChannels) : []),
    ...a('--seq-length', c.s),
    ...a('--max-position-embeddings', c.s),
    ...a('--micro-batch-size', c.b),
    ...a('--global-batch-size', run.globalBatch),
    ...a('--swiglu'),
    ...a('--normalization', 'RMSNorm'),
    ...a('--norm-epsilon', c.eps),
    ...a('--no-persist-layer-norm'),
    ...a('--position-embedding-type', 'rope'),
    ...a('--rotary-base', c.ropeBase),
    ...a('--disable-bias-linear'),
    ...a('--attention-dropout', 0),
    ...a('--hidden-dropout', 0),
    ...a('--untie-embeddings-and-output-weights'),
    ...a('--tokenizer-type', 'NullTokenizer'),
    ...a('--vocab-size', c.vocab > 0 ? c.vocab : 1),
    ...a('--make-vocab-size-divisible-by', 1),
    ...(run.dtype === 'fp16' ? a('--fp16') : run.dtype === 'bf16' ? a('--bf16') : []),
    ...(run.recompute
      ? [
          ...a('--recompute-granularity', 'full'),
          ...a('--recompute-method', 'uniform'),
          ...a('--recompute-num-layers', 1),
        ]
      : []),
    ...a('--no-gradient-accumulation-fusion'),
    ...a('--no-masked-softmax-fusion'),
    ...a('--no-rope-fusion'),
    ...a('--seed', c.seed),
  ];
}

/** Schedule flags: run.trainIters Adam steps at megatronLr, constant schedule, no evaluation, a log line per step. */
export function megatronScheduleArgs(run: Pick<MegatronRun, 'trainIters'>): string[] {
  return [
    ...a('--train-iters', run.trainIters),
    ...a('--lr', megatronLr),
    ...a('--lr-decay-style', 'constant'),
    ...a('--eval-iters', 0),
    ...a('--log-interval', 1),
  ];
}

/**
 * The Megatron-LM arguments of pretrain_gpt.py (argv form: flag, value, flag, …) for the same
 * model and TP/SP layout, on the mock dataset: model, parallel, tokenizer, data, schedule and the
 * switches that let the spec start without fused kernels it does not need.
 */
export function megatronArgs(c: LayerConfig, run: MegatronRun = playgroundRun(c), moe?: MoeSetup): string[] {
  return [
    ...megatronModelArgs(c, run),
    ...(moe ? moeArgv(moe, c.tp) : []),
    ...a('--mock-data'),
    ...megatronScheduleArgs(run),
  ];
}

/** The environment, the launcher and its script: what precedes the arguments. */
export interface MegatronLaunch {
  /** CUDA_DEVICE_MAX_CONNECTIONS=1: one hardware queue, so the async TP collectives are issued in program order. */
  readonly env: Readonly<Record<string, string>>;
  readonly launcher: readonly string[];
  readonly script: string;
  readonly args: readonly string[];
}

/**
 * The full launch on one node of `gpus` GPUs (default t: data-parallel size 1): env, torchrun,
 * pretrain_gpt.py, arguments; DP = gpus / t replicas of one micro-batch each. With `moe`, its MoE
 * block's flags (the expert mesh ETP·EP·EDP folded over the same GPUs).
 */
export function megatronLaunch(c: LayerConfig, moe?: MoeSetup, gpus = c.tp): MegatronLaunch {
  const run: MegatronRun = { ...playgroundRun(c), globalBatch: c.b * (gpus / c.tp) };
  return {
    env: { CUDA_DEVICE_MAX_CONNECTIONS: '1' },
    launcher: ['torchrun', '--nproc-per-node', String(gpus)],
    script: 'pretrain_gpt.py',
    args: megatronArgs(c, run, moe),
  };
}

/** The launch as a shell command: one flag (with its value) per line, joined by " \\\n". */
export function formatMegatronCommand(l: MegatronLaunch): string {
  const env = Object.entries(l.env).map(([k, v]) => `${k}=${v}`);
  return [`${[...env, ...l.launcher, l.script].join(' ')}`, ...argLines(l.args)].join(' \\\n  ');
}

function argLines(args: readonly string[]): string[] {
  const lines: string[] = [];
  for (const x of args) {
    if (x.startsWith('--') || lines.length === 0) lines.push(x);
    else lines[lines.length - 1] += ` ${x}`;
  }
  return lines;
}

/**
 * Every way Megatron-LM's run of the command still differs from the playground's (one sentence
 * each), at megatronRelease (core_v0.19.0).
 */
export function megatronCaveats(c: LayerConfig, run: MegatronRun = playgroundRun(c)): string[] {
  const out: string[] = [];
  const r = megatronRelease.tag;
  // KV groups < t is no caveat: the playground splits linear_qkv evenly and all-gathers the QKV
  // activations as Megatron-Core does since core_v0.16 (attention.py:353-380 at the pinned
  // core_v0.19.0), so its W % t rule is Megatron's too.
  if (c.sp && c.tp === 1)
    out.push('Megatron disables --sequence-parallel when tensor_model_parallel_size is 1, so the flag is left out.');
  if (c.vocab === 0)
    out.push(
      'Megatron always builds an embedding and a loss, so the command uses a vocabulary of 1 token; the playground layer has neither at vocab 0 and starts from a seeded input and upstream gradient.',
    );
  if (!Number.isInteger(c.ropeBase)) out.push(`Megatron parses --rotary-base as an integer; ${c.ropeBase} is not one.`);
  if (c.groups >= c.tp && c.groups < c.heads && c.tp > 1)
    out.push(
      "QKV shard layout: Megatron stores each rank's linear_qkv columns per query group ([q heads | k | v] of each of its groups, attention.py get_query_key_value_tensors); the playground stores the same numbers as [Q | K | V] of the rank's heads and groups, so the columns are in another order.",
    );
  if (transformerImpl(c) === 'transformer_engine')
    out.push(
      `Spec: under SP the command uses the Transformer Engine spec (${r}: the local spec's torch RMSNorm asserts not sequence_parallel, transformer/torch_norm.py:50): the norms are fused into TELayerNormColumnParallelLinear, attention is TEDotProductAttention (fused or flash; it keeps no s×s probabilities), so kernels and activation memory differ from the playground's unfused layer while the collectives are the same.`,
    );
  else
    out.push(
      `Local spec (--transformer-impl local, ${r}): the fusions that need Apex or Transformer Engine are switched off and --no-persist-layer-norm lets torch's RMSNorm build (transformer/torch_norm.py:48); the final norm is TENorm with Transformer Engine installed, torch's RMSNorm with neither it nor Apex, and fails with Apex alone (transformer_block.py:53-64, fused_layer_norm.py:66).`,
    );
  out.push(
    "Final norm: Megatron's GPTModel applies a final RMSNorm before the output layer; the playground layer feeds the output layer directly.",
    'Embeddings: untied in both (--untie-embeddings-and-output-weights); Megatron also adds no position embedding with RoPE, as the playground.',
    'Biases: none in either (--disable-bias-linear); Megatron would add each row-parallel bias once after the reduction.',
    'Weights and data: Megatron draws its initial weights from N(0, 0.02) and its tokens from the mock dataset; the playground derives both from its seed, so losses and gradients agree in shape and collectives, not in value.',
    `Training: Megatron runs ${run.trainIters} Adam steps at lr ${megatronLr} and averages the loss over tokens; the playground runs one forward and backward.`,
    run.dtype === 'fp32'
      ? 'Precision: float32 in both (no --bf16 or --fp16); Megatron on Ampere or newer may use TF32 in matmuls.'
      : `Precision: Megatron runs ${run.dtype} with float32 main weights (--${run.dtype}); the playground computes in float32.`,
  );
  return out;
}
