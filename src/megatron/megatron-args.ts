import type { LayerConfig } from '../parallel/config.ts';

/**
 * The Megatron-LM release the launch command is written for, and checked against
 * (tests/fixtures/megatron-flags.json lists every flag of that release, extracted from its
 * megatron/training/arguments.py and the config dataclasses it turns into flags, by
 * scripts/megatron-flags.py).
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
 * (V_p = ⌈V / (divisible-by · t)⌉ · divisible-by · t), megatron/training/models/gpt.py
 * (--transformer-impl local → get_gpt_layer_local_spec). Without --bf16 or --fp16 Megatron keeps
 * parameters and math in float32, as the playground does.
 */

/** One flag and its value (argv form). */
const a = (flag: string, value?: number | string): string[] => (value === undefined ? [flag] : [flag, String(value)]);

/** Training steps of the emitted command: a few, to see the loss move; the playground runs one. */
export const megatronTrainIters = 10;
/** Learning rate of the emitted command (Adam, constant schedule). */
export const megatronLr = 1e-4;

/**
 * The Megatron-LM arguments of pretrain_gpt.py (argv form: flag, value, flag, …) for the same
 * one-layer model and TP/SP layout: model, parallel, data (mock), tokenizer, schedule and the
 * switches that let the local spec start without Apex or Transformer Engine kernels.
 * Vocabulary V > 0: --tokenizer-type NullTokenizer --vocab-size V --make-vocab-size-divisible-by 1,
 * so Megatron pads to ⌈V/t⌉·t as the playground does.
 */
export function megatronArgs(c: LayerConfig): string[] {
  const t = c.tp;
  return [
    ...a('--tensor-model-parallel-size', t),
    ...(c.sp && t > 1 ? a('--sequence-parallel') : []),
    ...a('--transformer-impl', 'local'),
    ...a('--num-layers', 1),
    ...a('--hidden-size', c.h),
    ...a('--ffn-hidden-size', c.ffn),
    ...a('--num-attention-heads', c.heads),
    ...(c.groups < c.heads ? [...a('--group-query-attention'), ...a('--num-query-groups', c.groups)] : []),
    ...a('--seq-length', c.s),
    ...a('--max-position-embeddings', c.s),
    ...a('--micro-batch-size', c.b),
    ...a('--global-batch-size', c.b),
    ...a('--swiglu'),
    ...a('--normalization', 'RMSNorm'),
    ...a('--norm-epsilon', c.eps),
    ...a('--position-embedding-type', 'rope'),
    ...a('--rotary-base', c.ropeBase),
    ...a('--disable-bias-linear'),
    ...a('--attention-dropout', 0),
    ...a('--hidden-dropout', 0),
    ...a('--untie-embeddings-and-output-weights'),
    ...a('--tokenizer-type', 'NullTokenizer'),
    ...a('--vocab-size', c.vocab > 0 ? c.vocab : 1),
    ...a('--make-vocab-size-divisible-by', 1),
    ...a('--mock-data'),
    ...a('--train-iters', megatronTrainIters),
    ...a('--lr', megatronLr),
    ...a('--lr-decay-style', 'constant'),
    ...a('--eval-iters', 0),
    ...a('--log-interval', 1),
    ...a('--no-gradient-accumulation-fusion'),
    ...a('--no-masked-softmax-fusion'),
    ...a('--no-rope-fusion'),
    ...a('--seed', c.seed),
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

/** The full launch on one node of t GPUs (data-parallel size 1): env, torchrun, pretrain_gpt.py, arguments. */
export function megatronLaunch(c: LayerConfig): MegatronLaunch {
  return {
    env: { CUDA_DEVICE_MAX_CONNECTIONS: '1' },
    launcher: ['torchrun', '--nproc-per-node', String(c.tp)],
    script: 'pretrain_gpt.py',
    args: megatronArgs(c),
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
export function megatronCaveats(c: LayerConfig): string[] {
  const out: string[] = [];
  const r = megatronRelease.tag;
  // KV groups < t is no caveat: the playground splits linear_qkv evenly and all-gathers the QKV
  // activations as Megatron-Core does since core_v0.16 (attention.py get_query_key_value_tensors at
  // the pinned core_v0.19.0), so its W % t rule is Megatron's too.
  if (c.sp && c.tp === 1)
    out.push('Megatron disables --sequence-parallel when tensor_model_parallel_size is 1, so the flag is left out.');
  if (c.vocab === 0)
    out.push(
      'Megatron always builds an embedding and a loss, so the command uses a vocabulary of 1 token; the playground layer has neither at vocab 0 and starts from a seeded input and upstream gradient.',
    );
  if (!Number.isInteger(c.ropeBase)) out.push(`Megatron parses --rotary-base as an integer; ${c.ropeBase} is not one.`);
  out.push(
    "Final norm: Megatron's GPTModel applies a final RMSNorm before the output layer; the playground layer feeds the output layer directly.",
    'Embeddings: untied in both (--untie-embeddings-and-output-weights); Megatron also adds no position embedding with RoPE, as the playground.',
    'Biases: none in either (--disable-bias-linear); Megatron would add each row-parallel bias once after the reduction.',
    'Weights and data: Megatron draws its initial weights from N(0, 0.02) and its tokens from the mock dataset; the playground derives both from its seed, so losses and gradients agree in shape and collectives, not in value.',
    `Training: Megatron runs ${megatronTrainIters} Adam steps at lr ${megatronLr} and averages the loss over tokens; the playground runs one forward and backward.`,
    'Precision: float32 in both (no --bf16 or --fp16); Megatron on Ampere or newer may use TF32 in matmuls.',
    `Local spec (--transformer-impl local, ${r}): the fusions that need Apex or Transformer Engine are switched off; with the Transformer Engine spec the same model runs with fused kernels and its own communication overlap.`,
  );
  return out;
}
