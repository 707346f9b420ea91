import type { LayerConfig } from '../parallel/config.ts';

/*
 * Flag spellings from Megatron-LM megatron/training/arguments.py (NVIDIA/Megatron-LM, read at
 * commit 000c4ac2): _add_network_size_args (--num-layers, --hidden-size, --ffn-hidden-size,
 * --num-attention-heads, --group-query-attention, --num-query-groups, --max-position-embeddings,
 * --position-embedding-type {…, rope}, --rotary-base (type=int), --make-vocab-size-divisible-by
 * (default 128), --normalization {LayerNorm, RMSNorm}, --norm-epsilon, --swiglu,
 * --untie-embeddings-and-output-weights), _add_regularization_args (--attention-dropout,
 * --hidden-dropout), _add_training_args (--micro-batch-size), and the usual --seq-length,
 * --seed, --tensor-model-parallel-size, --sequence-parallel, --disable-bias-linear,
 * --tokenizer-type, --vocab-size. Megatron's padding (megatron/training/tokenizer/tokenizer.py,
 * _vocab_size_with_padding): V_p = V rounded up to a multiple of make-vocab-size-divisible-by ×
 * tensor-model-parallel-size; its _NullTokenizer adds one EOD id (vocab_size = --vocab-size + 1).
 */

/**
 * The Megatron-LM arguments (argv form: flag, value, flag, …) of the same one-layer model and
 * TP/SP layout: model and parallel flags only (no data, optimizer or iteration flags).
 * Vocabulary V > 0: --tokenizer-type NullTokenizer --vocab-size V−1 (NullTokenizer adds the EOD
 * id, giving V) and --make-vocab-size-divisible-by 1, so Megatron pads to ⌈V/t⌉·t as we do.
 */
export function megatronArgs(c: LayerConfig): string[] {
  const a = (flag: string, value?: number | string): string[] => (value === undefined ? [flag] : [flag, String(value)]);
  const t = c.tp;
  return [
    ...a('--tensor-model-parallel-size', t),
    ...(c.sp && t > 1 ? a('--sequence-parallel') : []),
    ...a('--num-layers', 1),
    ...a('--hidden-size', c.h),
    ...a('--ffn-hidden-size', c.ffn),
    ...a('--num-attention-heads', c.heads),
    ...(c.groups < c.heads ? [...a('--group-query-attention'), ...a('--num-query-groups', c.groups)] : []),
    ...a('--seq-length', c.s),
    ...a('--max-position-embeddings', c.s),
    ...a('--micro-batch-size', c.b),
    ...a('--swiglu'),
    ...a('--normalization', 'RMSNorm'),
    ...a('--norm-epsilon', c.eps),
    ...a('--position-embedding-type', 'rope'),
    ...a('--rotary-base', c.ropeBase),
    ...a('--disable-bias-linear'),
    ...a('--attention-dropout', 0),
    ...a('--hidden-dropout', 0),
    ...(c.vocab > 0
      ? [
          ...a('--untie-embeddings-and-output-weights'),
          ...a('--tokenizer-type', 'NullTokenizer'),
          ...a('--vocab-size', c.vocab - 1),
          ...a('--make-vocab-size-divisible-by', 1),
        ]
      : []),
    ...a('--seed', c.seed),
  ];
}

/** Where Megatron-LM would not run or would differ from the playground for this config (one sentence each). */
export function megatronCaveats(c: LayerConfig): string[] {
  const out: string[] = [];
  if (c.groups < c.tp) {
    out.push(
      `Megatron-Core rejects num_query_groups (${c.groups}) < tensor_model_parallel_size (${c.tp}): its TransformerConfig requires num_query_groups to be a multiple of the TP size; the playground replicates each KV group instead.`,
    );
  }
  if (c.sp && c.tp === 1)
    out.push('Megatron disables --sequence-parallel when tensor_model_parallel_size is 1, so the flag is left out.');
  if (c.vocab === 0)
    out.push(
      'Megatron always builds an embedding and a loss: add --tokenizer-type and --vocab-size to run it; the playground layer has neither at vocab 0.',
    );
  if (!Number.isInteger(c.ropeBase)) out.push(`Megatron parses --rotary-base as an integer; ${c.ropeBase} is not one.`);
  if (c.vocab > 0)
    out.push(
      "Megatron's GPT model applies a final norm before the output layer; the playground layer feeds the output layer directly.",
    );
  return out;
}

/** The arguments as a shell command continuation: one flag (with its value) per line, joined by " \\\n". */
export function formatMegatronArgs(args: readonly string[]): string {
  const lines: string[] = [];
  for (const x of args) {
    if (x.startsWith('--') || lines.length === 0) lines.push(x);
    else lines[lines.length - 1] += ` ${x}`;
  }
  return lines.map((l) => `  ${l}`).join(' \\\n');
}
