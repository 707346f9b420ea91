// `npm run sweep -- --experts E …`: the MoE block's flags, parsed and checked before a browser
// starts. Each refusal names its flag and the legal values (the run's own checks, moeRunErrors,
// worded with the flag that sets each field).
import { parseArgs } from 'node:util';
import { moeLayerPattern, parseMoeLayerFreq } from '../../src/parallel/moe-layer-freq.ts';
import { moeLayout, type MoeDispatcher } from '../../src/parallel/moe-layout.ts';
import { moeConfig, type MoeConfig } from '../../src/reference/moe/config.ts';
import { configDefaults, type LayerConfig } from '../../src/parallel/config.ts';
import { moeLayerRunErrors } from '../../src/session/moe-layer-run.ts';
import { moeRunErrors, type MoeRunArgs } from '../../src/session/moe-run.ts';

export const moeUsage = `usage: npm run sweep -- --experts E --topk K [--ep N] [--etp N] [--tp N] [--sp] [--m036]
       [--dispatcher alltoall|allgather] [--capacity F] [--drop-policy probs|position]
       [--score softmax|sigmoid] [--pre-softmax] [--aux-coeff C] [--z-coeff C] [--skew S]
       [--shared-expert FS] [--h N] [--ffn N] [--tokens N] [--seed N] [--repeat N] [--json]
       [--layer [--heads N] [--groups N] [--vocab V] [--layers L] [--moe-layer-freq N|PATTERN]]
  Runs one MoE layer forward and backward on lcm(tp, etp·ep) rank workers in headless Chromium and
  checks every rank against one device. --etp defaults to --tp and --dispatcher to allgather, as
  Megatron-LM's (arguments.py:569-570, transformer_config.py:862); --tokens is per rank; --m036 runs
  TP > 1 without --sp anyway (every TP rank routes the same tokens), which Megatron refuses in training;
  --repeat N runs it N more times after the first (which compiles the pipelines): the step is their median.
  --layer runs the whole transformer layer with the MoE block as its MLP (ln1, attention over TP with SP,
  residual, ln2, the block, residual; s = tokens·tp, b 1, --heads in --groups KV groups; --vocab V > 0 adds
  the embedding, output layer and cross entropy, one layer only) and checks it against one device; without it the block alone runs. --layers L (default 1) stacks L such layers
  (pipeline p = 1), --moe-layer-freq (Megatron's, default 1) marks which get the MoE block and which the
  dense MLP: an integer N (layer i when i % N = 0) or a list like "([1]*3+[0]*1)*3" of L entries.`;

export const moeOptions = {
  experts: { type: 'string' },
  topk: { type: 'string', default: '2' },
  ep: { type: 'string', default: '1' },
  etp: { type: 'string' },
  tp: { type: 'string', default: '1' },
  sp: { type: 'boolean', default: false },
  m036: { type: 'boolean', default: false },
  dispatcher: { type: 'string', default: 'allgather' },
  capacity: { type: 'string' },
  'drop-policy': { type: 'string', default: 'probs' },
  score: { type: 'string', default: 'softmax' },
  'pre-softmax': { type: 'boolean', default: false },
  'aux-coeff': { type: 'string', default: '0.01' },
  'z-coeff': { type: 'string' },
  skew: { type: 'string', default: '0' },
  'shared-expert': { type: 'string' },
  h: { type: 'string', default: '32' },
  ffn: { type: 'string', default: '16' },
  tokens: { type: 'string', default: '16' },
  seed: { type: 'string', default: '41' },
  repeat: { type: 'string', default: '0' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', default: false },
  layer: { type: 'boolean', default: false },
  layers: { type: 'string' },
  vocab: { type: 'string', default: '0' },
  'moe-layer-freq': { type: 'string' },
  heads: { type: 'string', default: '4' },
  groups: { type: 'string', default: '2' },
} as const;

/** The flag that sets each field, for the run's own messages. */
const flagOf: readonly [RegExp, string][] = [
  [/^numMoeExperts\b/, '--experts'],
  [/^moeRouterTopk\b/, '--topk'],
  [/^moeFfnHiddenSize\b/, '--ffn'],
  [/^moeRouterScoreFunction\b/, '--score'],
  [/^moeRouterPreSoftmax\b/, '--pre-softmax'],
  [/^moeAuxLossCoeff\b/, '--aux-coeff'],
  [/^moeZLossCoeff\b/, '--z-coeff'],
  [/^moeExpertCapacityFactor\b/, '--capacity'],
  [/^moeTokenDropPolicy\b/, '--drop-policy'],
  [/^moeSharedExpertIntermediateSize\b/, '--shared-expert'],
  [/^routerSkew\b/, '--skew'],
  [/^tp \d+ without sequence parallelism/, '--sp'],
  [/^tp \d+ does not divide moeSharedExpertIntermediateSize/, '--shared-expert'],
  [/^tp and etp|^tp \d+ and etp/, '--ep/--etp'],
  [/^etp\b/, '--etp'],
  [/^ep\b/, '--ep'],
  [/^tp\b/, '--tp'],
  [/^dispatcher\b/, '--dispatcher'],
  [/^h is/, '--h'],
  [/^tokens per rank/, '--tokens'],
  [/^the layer has tp/, '--tp/--sp'],
  [/must be divisible by query groups|^query groups/, '--groups'],
  [/^hidden size h|^head width/, '--heads'],
  [/^heads \(/, '--heads'],
  [/^with sequence parallel the sequence length/, '--tokens'],
];

/** A refusal with its flag in front. */
function withFlag(message: string): string {
  const flag = flagOf.find(([re]) => re.test(message))?.[1];
  return flag ? `${flag}: ${message}` : message;
}

/** A number flag: finite, and within what `ok` allows (`legal` says what). */
function num(flag: string, text: string, ok: (v: number) => boolean, legal: string, whole = false): number {
  const v = Number(text);
  if (text.trim() === '' || !Number.isFinite(v) || (whole && !Number.isInteger(v)) || !ok(v))
    throw new Error(`${flag} is "${text}"; write ${legal}.`);
  return v;
}

/** The run's arguments from the command line, or every reason they are refused (one per problem). */
export function parseMoeSweep(
  argv: readonly string[],
):
  | { args: MoeRunArgs; layer?: LayerConfig; pattern?: boolean[]; repeats: number; json: boolean }
  | { errors: string[] }
  | { help: true } {
  let values: ReturnType<typeof parseArgs<{ options: typeof moeOptions }>>['values'];
  try {
    values = parseArgs({ args: [...argv], options: moeOptions }).values;
  } catch (e) {
    return { errors: [(e as Error).message] };
  }
  if (values.help) return { help: true };
  const errors: string[] = [];
  const read = <T>(f: () => T, fallback: T): T => {
    try {
      return f();
    } catch (e) {
      errors.push((e as Error).message);
      return fallback;
    }
  };
  const whole = (flag: string, text: string | undefined, min: number) =>
    read(() => num(flag, text ?? '', (v) => v >= min, `a whole number ≥ ${min}`, true), min);
  if (values.experts === undefined)
    errors.push('--experts is missing; write the number of routed experts E (e.g. --experts 8).');
  const E = whole('--experts', values.experts ?? '1', 1);
  const tp = whole('--tp', values.tp, 1);
  const dispatcher = values.dispatcher as MoeDispatcher;
  if (dispatcher !== 'alltoall' && dispatcher !== 'allgather')
    errors.push(`--dispatcher is "${values.dispatcher}"; write alltoall or allgather.`);
  const policy = values['drop-policy'];
  if (policy !== 'probs' && policy !== 'position')
    errors.push(`--drop-policy is "${policy}"; write probs or position.`);
  const score = values.score;
  if (score !== 'softmax' && score !== 'sigmoid') errors.push(`--score is "${score}"; write softmax or sigmoid.`);
  const config: MoeConfig = moeConfig(
    {
      numMoeExperts: E,
      moeRouterTopk: whole('--topk', values.topk, 1),
      moeFfnHiddenSize: whole('--ffn', values.ffn, 1),
    },
    {
      moeRouterScoreFunction: score === 'sigmoid' ? 'sigmoid' : 'softmax',
      moeRouterPreSoftmax: values['pre-softmax'],
      moeAuxLossCoeff: read(() => num('--aux-coeff', values['aux-coeff'], (v) => v >= 0, 'a number ≥ 0 (0: off)'), 0),
      moeZLossCoeff:
        values['z-coeff'] === undefined
          ? null
          : read(() => num('--z-coeff', values['z-coeff']!, (v) => v >= 0, 'a number ≥ 0, or leave it out'), null),
      moeExpertCapacityFactor:
        values.capacity === undefined
          ? null
          : read(
              () => num('--capacity', values.capacity!, (v) => v > 0, 'a number > 0, or leave it out for dropless'),
              null,
            ),
      moeTokenDropPolicy: policy === 'position' ? 'position' : 'probs',
      moeSharedExpertIntermediateSize:
        values['shared-expert'] === undefined ? null : whole('--shared-expert', values['shared-expert'], 1),
      routerSkew: read(() => num('--skew', values.skew, () => true, 'a finite number (0: none)'), 0),
    },
  );
  const args: MoeRunArgs = {
    config,
    h: whole('--h', values.h, 1),
    tokens: whole('--tokens', values.tokens, 1),
    seed: whole('--seed', values.seed, 0),
    layout: moeLayout(whole('--ep', values.ep, 1), {
      tp,
      sp: values.sp,
      // arguments.py:569-570: expert_tensor_parallel_size defaults to tensor_model_parallel_size
      etp: values.etp === undefined ? tp : whole('--etp', values.etp, 1),
      dispatcher,
    }),
    demonstration: values.m036,
  };
  const repeats = whole('--repeat', values.repeat, 0);
  if (values.m036 && !(tp > 1 && !values.sp))
    errors.push('--m036 shows TP > 1 without SP; give --tp 2 (or more) and leave --sp out.');
  if (values.layer && values.m036) errors.push('--m036 runs the block alone; leave out --layer (or --m036).');
  const layer: LayerConfig | undefined = values.layer
    ? {
        ...configDefaults,
        s: args.tokens * tp,
        b: 1,
        h: args.h,
        heads: whole('--heads', values.heads, 1),
        groups: whole('--groups', values.groups, 1),
        ffn: 4 * args.h, // the dense layers' MLP (--layers): Megatron's default 4h (transformer_config.py:1330)
        vocab: whole('--vocab', values.vocab, 0),
        tp,
        sp: values.sp,
        seed: args.seed,
      }
    : undefined;
  let pattern: boolean[] | undefined;
  if ((values.layers !== undefined || values['moe-layer-freq'] !== undefined) && !values.layer)
    errors.push('--layers and --moe-layer-freq stack whole layers; add --layer.');
  else if (values.layer && (values.layers !== undefined || values['moe-layer-freq'] !== undefined)) {
    const L = whole('--layers', values.layers ?? '1', 1);
    const freq = parseMoeLayerFreq(values['moe-layer-freq'] ?? '1');
    const made = 'freq' in freq ? moeLayerPattern(freq.freq, L) : freq;
    if ('error' in made) errors.push(made.error);
    else pattern = made.pattern;
    if (values.vocab !== '0')
      errors.push('--vocab runs one layer; leave out --layers and --moe-layer-freq, or --vocab.');
  }
  if (values.vocab !== '0' && !values.layer) errors.push('--vocab is for the whole layer; add --layer.');
  if (errors.length > 0) return { errors };
  const refused = layer ? moeLayerRunErrors({ layer, config, layout: args.layout }) : moeRunErrors(args);
  if (refused.length > 0) return { errors: [...new Set(refused.map(withFlag))] };
  return { args, ...(layer && { layer }), ...(pattern && { pattern }), repeats, json: values.json };
}
