import { moeDefaults, parseMoeLayerFreq, tokenDispatchers, type MoeSetup } from '../../src/megatron/moe.ts';
import { parseWhole } from '../../src/parallel/config-parse.ts';
import { parseChoice } from '../../src/projection/layer/kernel-options.ts';

/** The MoE flags of `npm run project` (Megatron-LM core_v0.19.0 spellings, with short forms). */
export const moeOptions = {
  experts: { type: 'string' },
  'num-experts': { type: 'string' },
  topk: { type: 'string' },
  'moe-router-topk': { type: 'string' },
  'moe-ffn-hidden-size': { type: 'string' },
  'moe-shared-expert-intermediate-size': { type: 'string' },
  'moe-layer-freq': { type: 'string' },
  'moe-expert-capacity-factor': { type: 'string' },
  'moe-pad-expert-input-to-capacity': { type: 'boolean', default: false },
  'moe-token-dispatcher-type': { type: 'string' },
  'moe-grouped-gemm': { type: 'boolean', default: false },
  'moe-aux-loss-coeff': { type: 'string' },
  ep: { type: 'string' },
  'expert-model-parallel-size': { type: 'string' },
  etp: { type: 'string' },
  'expert-tensor-parallel-size': { type: 'string' },
  'overlap-moe-expert-parallel-comm': { type: 'boolean', default: false },
  'moe-shared-expert-overlap': { type: 'boolean', default: false },
  'moe-imbalance': { type: 'string' },
} as const;

/** The parsed values of moeOptions. */
export type MoeValues = { readonly [K in keyof typeof moeOptions]?: string | boolean };

/** The usage lines of the MoE flags. */
export const moeUsage = `MoE and expert parallelism (Megatron-LM core_v0.19.0 spellings; docs/projection-moe.md):
  --experts E | --num-experts E          experts per MoE layer (turns MoE on)
  --topk K | --moe-router-topk K         experts per token (default 2)
  --moe-ffn-hidden-size F                one expert's FFN (default --ffn)
  --moe-shared-expert-intermediate-size F  the shared experts' FFN (default none)
  --moe-layer-freq N|LIST                one MoE layer every N (default 1), or a 0/1 list such as "([0]*3+[1]*58)"
  --moe-expert-capacity-factor CF        token dropping at CF × the mean load (default dropless)
  --moe-pad-expert-input-to-capacity     drop-and-pad: every expert computes its full capacity (needs CF)
  --moe-token-dispatcher-type ${tokenDispatchers.join('|')}  (default allgather)
  --moe-grouped-gemm                     one grouped GEMM over the local experts
  --moe-aux-loss-coeff C                 carried to the job's command (default 0)
  --ep EP | --expert-model-parallel-size EP
  --etp ETP | --expert-tensor-parallel-size ETP   (default t)
  --overlap-moe-expert-parallel-comm     the EP all-to-alls under another micro-batch's compute
  --moe-shared-expert-overlap            the shared experts beside dispatch and combine
  --moe-imbalance F                      what-if: the busiest EP rank's tokens over the mean (default 1: uniform)`;

/** The one value of a flag with a short and a long spelling (not both). */
function either(v: MoeValues, short: keyof typeof moeOptions, long: keyof typeof moeOptions): string | undefined {
  if (v[short] !== undefined && v[long] !== undefined)
    throw new Error(`--${short} and --${long} are the same setting: give one.`);
  const x = v[short] ?? v[long];
  return typeof x === 'string' ? x : undefined;
}

/** A positive number flag. */
function positive(flag: string, text: string): number {
  const x = Number(text);
  if (!(Number.isFinite(x) && x > 0)) throw new Error(`${flag} must be a number > 0, got "${text}".`);
  return x;
}

/**
 * The MoE setup of the flags (undefined without --experts / --num-experts; a MoE flag without it
 * is refused), `ffn` the dense FFN (--moe-ffn-hidden-size's default, arguments.py:1595-1596).
 * `base` (--hf-config's experts, moe.ts moeFromHf) stands in for --num-experts and the flags it
 * fills; a flag given overrides it, and --num-experts replaces it whole.
 */
export function parseMoeFlags(v: MoeValues, ffn: number, base?: MoeSetup): MoeSetup | undefined {
  const experts = either(v, 'experts', 'num-experts');
  if (experts === undefined && !base) {
    const given = (Object.keys(moeOptions) as (keyof typeof moeOptions)[]).filter(
      (k) => v[k] !== undefined && v[k] !== false,
    );
    if (given.length > 0) throw new Error(`--${given[0]} is a MoE flag: give --num-experts E (or --experts E) too.`);
    return undefined;
  }
  const d = experts !== undefined ? moeDefaults(parseWhole('--num-experts', experts, 1), ffn) : base!;
  const topk = either(v, 'topk', 'moe-router-topk');
  const ep = either(v, 'ep', 'expert-model-parallel-size');
  const etp = either(v, 'etp', 'expert-tensor-parallel-size');
  const str = (k: keyof typeof moeOptions): string | undefined => (typeof v[k] === 'string' ? v[k] : undefined);
  const shared = str('moe-shared-expert-intermediate-size');
  const freq = str('moe-layer-freq');
  const cf = str('moe-expert-capacity-factor');
  const dispatcher = str('moe-token-dispatcher-type');
  const aux = str('moe-aux-loss-coeff');
  const imbalance = str('moe-imbalance');
  return {
    ...d,
    ...(topk !== undefined && { topk: parseWhole('--moe-router-topk', topk, 1) }),
    ...(str('moe-ffn-hidden-size') !== undefined && {
      ffn: parseWhole('--moe-ffn-hidden-size', str('moe-ffn-hidden-size')!, 1),
    }),
    ...(shared !== undefined && { sharedFfn: parseWhole('--moe-shared-expert-intermediate-size', shared, 1) }),
    ...(freq !== undefined && { layerFreq: parseMoeLayerFreq(freq) }),
    ...(cf !== undefined && { capacityFactor: positive('--moe-expert-capacity-factor', cf) }),
    ...(dispatcher !== undefined && {
      dispatcher: parseChoice('--moe-token-dispatcher-type', dispatcher, tokenDispatchers),
    }),
    ...(v['moe-pad-expert-input-to-capacity'] === true && { padToCapacity: true }),
    groupedGemm: v['moe-grouped-gemm'] === true,
    ...(aux !== undefined && { auxLossCoeff: Number(aux) }),
    ...(ep !== undefined && { ep: parseWhole('--expert-model-parallel-size', ep, 1) }),
    ...(etp !== undefined && { etp: parseWhole('--expert-tensor-parallel-size', etp, 1) }),
    overlapEpComm: v['overlap-moe-expert-parallel-comm'] === true,
    sharedExpertOverlap: v['moe-shared-expert-overlap'] === true,
    ...(imbalance !== undefined && { imbalance: positive('--moe-imbalance', imbalance) }),
  };
}
