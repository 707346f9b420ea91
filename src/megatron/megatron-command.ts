// Reads a pasted Megatron-LM launch (torchrun … pretrain_gpt.py --flag value …) back into a training
// setup, so a measured job can be compared with the projection of the configuration it ran.
// Flags as Megatron-LM's megatron/training/arguments.py names them (release in megatron-args.ts).
import type { TrainDtype } from '../hardware/dtype.ts';
import type { TrainingSetup } from './training-setup.ts';

/** What a command says, and which settings it left to defaults (named by their flag). */
export interface ParsedCommand {
  readonly setup: TrainingSetup;
  readonly dtype: TrainDtype;
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
 * The setup of a pasted launch. Required: --hidden-size, --num-attention-heads, --seq-length
 * (each names itself when missing). Defaults as in Megatron-LM: TP 1, --num-layers 1 only if
 * absent (said), FFN 4h, query groups = heads, micro-batch 1, global batch = micro-batch · DP,
 * fp32 without --bf16/--fp16. GPUs = torchrun's --nproc-per-node × --nnodes, else `gpus`.
 * Throws an Error naming the flag and its bad value.
 */
export function parseMegatronCommand(text: string, gpus?: number): ParsedCommand {
  const words = shellWords(text);
  const flags = new Map<string, string | true>();
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    if (!w.startsWith('--')) continue;
    const [name, inline] = w.includes('=') ? [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)] : [w, undefined];
    const next = words[i + 1];
    if (inline !== undefined) flags.set(name!, inline);
    else if (next !== undefined && !next.startsWith('--')) {
      flags.set(name!, next);
      i++;
    } else flags.set(name!, true);
  }
  if (!flags.size) throw new Error('no --flags found: paste the Megatron-LM command (torchrun … pretrain_gpt.py --…).');
  const defaulted: string[] = [];
  const whole = (flag: string, fallback?: number): number => {
    const v = flags.get(flag) ?? flags.get(flag.replace(/-/g, '_'));
    if (v === undefined || v === true) {
      if (fallback === undefined) throw new Error(`the command has no ${flag}: it is needed for the projection.`);
      defaulted.push(`${flag} ${fallback}`);
      return fallback;
    }
    const n = Number(v);
    if (!(Number.isInteger(n) && n >= 1)) throw new Error(`${flag} must be a whole number ≥ 1, got "${v}".`);
    return n;
  };
  const has = (flag: string): boolean => flags.has(flag);
  const h = whole('--hidden-size');
  const heads = whole('--num-attention-heads');
  const s = whole('--seq-length');
  const tp = whole('--tensor-model-parallel-size', 1);
  const b = whole('--micro-batch-size', 1);
  const nodes = has('--nnodes') ? whole('--nnodes') : 1;
  const perNode = has('--nproc-per-node')
    ? whole('--nproc-per-node')
    : has('--nproc_per_node')
      ? whole('--nproc_per_node')
      : undefined;
  const n = perNode !== undefined ? perNode * nodes : (gpus ?? tp);
  if (perNode === undefined) defaulted.push(`GPUs ${n} (no torchrun --nproc-per-node)`);
  const pp = has('--pipeline-model-parallel-size') ? whole('--pipeline-model-parallel-size') : 1;
  if (pp > 1)
    throw new Error(`--pipeline-model-parallel-size ${pp}: the projection models tensor and data parallelism only.`);
  const setup: TrainingSetup = {
    sizes: {
      s,
      b,
      h,
      heads,
      groups: has('--num-query-groups') ? whole('--num-query-groups') : heads,
      ffn: whole('--ffn-hidden-size', 4 * h),
      vocab: has('--vocab-size')
        ? whole('--vocab-size')
        : has('--padded-vocab-size')
          ? whole('--padded-vocab-size')
          : 0,
    },
    tp,
    sp: has('--sequence-parallel'),
    layers: whole('--num-layers', 1),
    gpus: n,
    globalBatch: whole('--global-batch-size', b * Math.max(1, Math.floor(n / tp))),
    overlap: !has('--no-async-tensor-model-parallel-allreduce'),
    recompute: flags.get('--recompute-granularity') === 'full',
  };
  if (!has('--vocab-size') && !has('--padded-vocab-size')) defaulted.push('no vocabulary (no --vocab-size)');
  const dtype: TrainDtype = has('--bf16') ? 'bf16' : has('--fp16') ? 'fp16' : 'fp32';
  if (dtype === 'fp32') defaulted.push('fp32 (no --bf16 or --fp16)');
  return { setup, dtype, defaulted };
}
