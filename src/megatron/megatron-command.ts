// Reads a pasted Megatron-LM launch (torchrun … pretrain_gpt.py --flag value …) back into a training
// setup, so a measured job can be compared with the projection of the configuration it ran.
// Flags and defaults as megatron/training/arguments.py has them at megatronRelease (megatron-args.ts).
import { fsdpFromFlags } from './fsdp.ts';
import type { TrainDtype } from '../hardware/dtype.ts';
import type { LayerArch } from './layer-arch.ts';
import type { TrainingSetup } from './training-setup.ts';

/** Megatron's activation recomputation (--recompute-granularity, --recompute-method, --recompute-num-layers). */
export interface MegatronRecompute {
  readonly granularity: 'full' | 'selective' | 'none';
  /** 'uniform' | 'block' with full granularity; undefined otherwise. */
  readonly method?: string;
  readonly numLayers?: number;
}

/**
 * What a command says about the model and its parallel layout, as typed data, with Megatron's
 * defaults applied (arguments.py at the pinned release; line numbers in docs/megatron-job.md).
 */
export interface MegatronJobFlags {
  /** The layer a command describes: --swiglu makes it llama (layer-arch.ts). */
  readonly layerArch: LayerArch;
  readonly normalization: string;
  readonly positionEmbedding: string;
  /** Linear biases (Megatron's default; --disable-bias-linear removes them). */
  readonly bias: boolean;
  readonly tiedEmbeddings: boolean;
  /** --vocab-size as given (0 when the command names none), and the padded size Megatron uses. */
  readonly vocabSize: number;
  readonly makeVocabSizeDivisibleBy: number;
  readonly paddedVocab: number;
  readonly tp: number;
  readonly pp: number;
  /** Virtual stages per pipeline rank (--num-virtual-stages-per-pipeline-rank, or layers per stage / --num-layers-per-virtual-pipeline-stage); 1 without. */
  readonly vpp: number;
  readonly cp: number;
  readonly sp: boolean;
  readonly distributedOptimizer: boolean;
  readonly overlapGradReduce: boolean;
  readonly overlapParamGather: boolean;
  readonly tpCommOverlap: boolean;
  readonly recompute: MegatronRecompute;
  readonly transformerImpl: string;
}

/** What a command says, and which settings it left to defaults (named by their flag). */
export interface ParsedCommand {
  readonly setup: TrainingSetup;
  readonly dtype: TrainDtype;
  /** Model and parallel flags beyond the setup, for the projection to pick up. */
  readonly flags: MegatronJobFlags;
  /** Settings the command does not give, with the value used. */
  readonly defaulted: readonly string[];
}

/** Splits a shell command into words: quotes, backslash-newline continuations and VAR=value prefixes handled. */
export function shellWords(text: string): string[] {
  const words: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|'([^']*)'|((?:[^\s"'\\]|\\[^\n])+)|\\\n/g;
  let cur: string | null = null;
  let last = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const gap = text.slice(last, m.index);
    if (/\s/.test(gap) && cur !== null) {
      words.push(cur);
      cur = null;
    }
    last = re.lastIndex;
    if (m[0] === '\\\n') continue;
    const piece = m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : (m[2] ?? m[3]!.replace(/\\(.)/g, '$1'));
    cur = (cur ?? '') + piece;
  }
  if (cur !== null) words.push(cur);
  return words;
}

/**
 * The --flags of an argv list: `--name value`, `--name=value`, or a switch (true). Underscored
 * spellings (torchrun's --nproc_per_node) are stored dashed. A word after a flag is its value
 * unless it is itself a --flag.
 */
export function flagMap(words: readonly string[]): Map<string, string | true> {
  const flags = new Map<string, string | true>();
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    if (!w.startsWith('--')) continue;
    const eq = w.indexOf('=');
    const name = (eq > 0 ? w.slice(0, eq) : w).replace(/_/g, '-');
    const next = words[i + 1];
    if (eq > 0) flags.set(name, w.slice(eq + 1));
    else if (next !== undefined && !next.startsWith('--')) {
      flags.set(name, next);
      i++;
    } else flags.set(name, true);
  }
  return flags;
}

/** The words after a list-valued flag (argparse nargs="*": up to the next flag), or undefined when absent. */
export function listAfter(words: readonly string[], flag: string): string[] | undefined {
  const at = words.indexOf(flag);
  if (at < 0) return undefined;
  const list: string[] = [];
  for (let i = at + 1; i < words.length && !words[i]!.startsWith('--'); i++) list.push(words[i]!);
  return list;
}

/** Tokenizers whose vocabulary size Megatron knows without --vocab-size (GPT-2's BPE: 50257 tokens). */
const knownVocab: Readonly<Record<string, number>> = { GPT2BPETokenizer: 50257 };

/**
 * The setup of a pasted launch. Required: --hidden-size, --num-attention-heads, --seq-length
 * (each names itself when missing). Defaults as Megatron-LM's arguments.py applies them: TP 1;
 * --num-layers 1 only if absent (said); FFN = 4h, or ⌊8h/3/64⌋·64 with --swiglu
 * (int((4h·2/3)/64)·64); query groups = heads unless --group-query-attention (then
 * --num-query-groups); vocabulary padded to ⌈V / (d·t)⌉·d·t with d = --make-vocab-size-divisible-by
 * (default 128); micro-batch 1; global batch = micro-batch · DP; fp32 without --bf16/--fp16.
 * GPUs = torchrun's --nproc-per-node × --nnodes, else `gpus`. Throws an Error naming the flag and
 * its bad value, or the flag the projection cannot model yet (pipeline, context parallelism).
 */
export function parseMegatronCommand(text: string, gpus?: number): ParsedCommand {
  const flags = flagMap(shellWords(text));
  if (!flags.size) throw new Error('no --flags found: paste the Megatron-LM command (torchrun … pretrain_gpt.py --…).');
  const defaulted: string[] = [];
  const has = (flag: string): boolean => flags.has(flag);
  const text_ = (flag: string, fallback: string): string => {
    const v = flags.get(flag);
    return typeof v === 'string' ? v : fallback;
  };
  const whole = (flag: string, fallback?: number, say = true): number => {
    const v = flags.get(flag);
    if (v === undefined || v === true) {
      if (fallback === undefined) throw new Error(`the command has no ${flag}: it is needed for the projection.`);
      if (say) defaulted.push(`${flag} ${fallback}`);
      return fallback;
    }
    const n = Number(v);
    if (!(Number.isInteger(n) && n >= 1)) throw new Error(`${flag} must be a whole number ≥ 1, got "${v}".`);
    return n;
  };
  const h = whole('--hidden-size');
  const heads = whole('--num-attention-heads');
  const s = whole('--seq-length');
  const tp = whole('--tensor-model-parallel-size', 1, false);
  const pp = whole('--pipeline-model-parallel-size', 1, false);
  const cp = whole('--context-parallel-size', 1, false);
  const b = whole('--micro-batch-size', 1);
  const layers = whole('--num-layers', 1);
  const nodes = whole('--nnodes', 1, false);
  const perNode = has('--nproc-per-node') ? whole('--nproc-per-node') : undefined;
  const n = perNode !== undefined ? perNode * nodes : (gpus ?? tp * pp * cp);
  if (perNode === undefined) defaulted.push(`GPUs ${n} (no torchrun --nproc-per-node)`);

  // arguments.py validate_args: --swiglu without --ffn-hidden-size gives int((4h·2/3)/64)·64, else 4h.
  const swiglu = has('--swiglu');
  const ffn = whole('--ffn-hidden-size', swiglu ? Math.floor((4 * h * 2) / 3 / 64) * 64 : 4 * h);
  // argument_utils.py core_transformer_config_from_args: num_query_groups only with --group-query-attention.
  const gqa = has('--group-query-attention');
  if (has('--num-query-groups') && !gqa)
    defaulted.push(`query groups = heads (${heads}): --num-query-groups counts only with --group-query-attention`);
  const groups = gqa ? whole('--num-query-groups', heads) : heads;
  // arguments.py:1291-1293: --kv-channels (the head width d) defaults to h / heads.
  const kvChannels = has('--kv-channels') ? whole('--kv-channels') : undefined;
  // vocab_utils.py calculate_padded_vocab_size: ⌈V / (d·t)⌉·d·t.
  const tokenizer = text_('--tokenizer-type', '');
  const vocabSize = has('--vocab-size') ? whole('--vocab-size') : (knownVocab[tokenizer] ?? 0);
  const divisibleBy = whole('--make-vocab-size-divisible-by', 128, false);
  const multiple = divisibleBy * tp;
  const paddedVocab = has('--padded-vocab-size')
    ? whole('--padded-vocab-size')
    : vocabSize > 0
      ? Math.ceil(vocabSize / multiple) * multiple
      : 0;
  if (!vocabSize && !has('--padded-vocab-size')) defaulted.push('no vocabulary (no --vocab-size)');
  else if (!has('--vocab-size') && !has('--padded-vocab-size'))
    defaulted.push(`vocabulary ${vocabSize} (${tokenizer})`);

  const granularity = text_('--recompute-granularity', has('--recompute-activations') ? 'selective' : 'none');
  if (granularity !== 'full' && granularity !== 'selective' && granularity !== 'none')
    throw new Error(`--recompute-granularity must be full or selective, got "${granularity}".`);
  const vpp = has('--num-virtual-stages-per-pipeline-rank')
    ? whole('--num-virtual-stages-per-pipeline-rank')
    : has('--num-layers-per-virtual-pipeline-stage')
      ? Math.max(1, Math.floor(layers / pp / whole('--num-layers-per-virtual-pipeline-stage')))
      : 1;
  const jobFlags: MegatronJobFlags = {
    layerArch: swiglu ? 'llama' : 'gpt',
    normalization: text_('--normalization', 'LayerNorm'),
    positionEmbedding: has('--use-rotary-position-embeddings')
      ? 'rope'
      : text_('--position-embedding-type', 'learned_absolute'),
    bias: !has('--disable-bias-linear'),
    tiedEmbeddings: !has('--untie-embeddings-and-output-weights'),
    vocabSize,
    makeVocabSizeDivisibleBy: divisibleBy,
    paddedVocab,
    tp,
    pp,
    vpp,
    cp,
    sp: has('--sequence-parallel') && tp > 1,
    distributedOptimizer: has('--use-distributed-optimizer'),
    overlapGradReduce: has('--overlap-grad-reduce'),
    overlapParamGather: has('--overlap-param-gather'),
    tpCommOverlap: has('--tp-comm-overlap'),
    recompute: {
      granularity,
      ...(has('--recompute-method') && { method: text_('--recompute-method', '') }),
      ...(has('--recompute-num-layers') && { numLayers: whole('--recompute-num-layers') }),
    },
    transformerImpl: text_('--transformer-impl', 'transformer_engine'),
  };
  // FSDP (fsdp.ts): --use-megatron-fsdp with its strategy, or --use-torch-fsdp2.
  const fsdp = fsdpFromFlags((f) => flags.get(f));
  if (pp > 1)
    throw new Error(`--pipeline-model-parallel-size ${pp}: the projection models tensor and data parallelism only.`);
  if (cp > 1) throw new Error(`--context-parallel-size ${cp}: the projection models tensor and data parallelism only.`);
  const setup: TrainingSetup = {
    sizes: { s, b, h, heads, groups, ffn, vocab: paddedVocab, ...(kvChannels !== undefined && { kvChannels }) },
    tp,
    sp: jobFlags.sp,
    layers,
    gpus: n,
    globalBatch: whole('--global-batch-size', b * Math.max(1, Math.floor(n / tp))),
    // The async dgrad all-reduce under wgrad is always on in Megatron-Core's linear layers today
    // (allreduce_dgrad in layers.py); the removed --no-async-tensor-model-parallel-allreduce still turns it off here.
    overlap: !has('--no-async-tensor-model-parallel-allreduce'),
    recompute: granularity === 'full',
    ...(fsdp && { fsdp }),
  };
  const dtype: TrainDtype = has('--bf16') ? 'bf16' : has('--fp16') ? 'fp16' : 'fp32';
  if (dtype === 'fp32') defaulted.push('fp32 (no --bf16 or --fp16)');
  return { setup, dtype, flags: jobFlags, defaulted };
}
