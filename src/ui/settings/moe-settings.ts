// The page's Mixture-of-Experts settings in Megatron's terms (pure, no DOM): the MoeSetup the exports
// carry, each setting's issue at its control with the values that would pass, and the MoE presets.
import { moeRefusals, type MoeRuleFlag, type MoeSetup, type TokenDispatcher } from '../../megatron/moe.ts';
import { withPreset, type Settings } from './state.ts';
import { configDefaults, type PresetName } from '../../parallel/config.ts';
import { moeWorld, type MoeDispatcher, type MoeLayout } from '../../parallel/moe-layout.ts';
import { maxMeshRanks } from '../../mesh/rank-layout.ts';
import { moeConfig } from '../../reference/moe/config.ts';
import { moeRunErrors, type MoeRunArgs } from '../../session/moe-run.ts';

/** Whether the page's layer has an MoE block (E > 0) in place of the dense MLP. */
export const moeOn = (s: Pick<Settings, 'experts'>): boolean => s.experts > 0;

/** f_moe: the expert width, or the layer's ffn when 0 (Megatron's default, arguments.py:1595-1596). */
export const expertFfn = (s: Pick<Settings, 'moeFfn' | 'ffn'>): number => s.moeFfn || s.ffn;

/**
 * The Megatron flags of the page's MoE block, or undefined for the dense MLP. The ranks run one
 * grouped GEMM over each rank's experts (--moe-grouped-gemm); at k = 1 a softmax router needs
 * --moe-router-pre-softmax (transformer_config.py, "Please use --moe-router-pre-softmax when topk is 1").
 */
export function moeSetupOf(s: Settings): MoeSetup | undefined {
  if (!moeOn(s)) return undefined;
  return {
    experts: s.experts,
    topk: s.topk,
    ffn: expertFfn(s),
    ...(s.sharedFfn > 0 && { sharedFfn: s.sharedFfn }),
    layerFreq: 1,
    ...(s.capacity !== null && { capacityFactor: s.capacity }),
    dispatcher: s.dispatcher,
    groupedGemm: true,
    scoreFunction: s.score,
    ...(s.topk === 1 && s.score === 'softmax' && { preSoftmax: true }),
    auxLossCoeff: s.aux,
    ep: s.ep,
    etp: s.etp,
    overlapEpComm: false,
    sharedExpertOverlap: false,
    imbalance: 1,
  };
}

/** Whether the page's ranks run dispatcher `d` (moe-layout.ts: alltoall and allgather; flex, DeepEP's, is the projection's only). */
export const pageRanksDispatch = (d: TokenDispatcher): d is MoeDispatcher => d === 'alltoall' || d === 'allgather';

/**
 * The MoE block's layout on the ranks: the attention's t with SP (off in the M036 demonstration), EP, ETP,
 * the dispatcher (flex is refused at its control by moeIssues; the layout keeps alltoall meanwhile, the
 * exchange DeepEP's dispatch replaces, so the rank count and issues are still computed).
 */
export const moeLayoutOf = (s: Settings): MoeLayout => ({
  tp: s.tp,
  sp: s.sp && !s.moeNoSp,
  ep: s.ep,
  etp: s.etp,
  dispatcher: pageRanksDispatch(s.dispatcher) ? s.dispatcher : 'alltoall',
});

/** GPUs (ranks) the page's MoE layer runs on: both meshes folded, lcm(t, ETP·EP) (moe-layout.ts moeWorld); t without MoE. */
export const moeRanks = (s: Settings): number => (moeOn(s) ? moeWorld(moeLayoutOf(s)) : s.tp);

/**
 * What the ranks run for the page's MoE block: the Megatron-named config with the router skew, h,
 * the tokens each rank routes (its sequence shard s·b/t under SP, else all s·b), the layer's seed.
 */
export function moeRunArgsOf(s: Settings): MoeRunArgs {
  const l = moeLayoutOf(s);
  return {
    config: moeConfig(
      { numMoeExperts: s.experts, moeRouterTopk: s.topk, moeFfnHiddenSize: expertFfn(s) },
      {
        moeRouterScoreFunction: s.score,
        moeRouterPreSoftmax: s.topk === 1 && s.score === 'softmax',
        moeAuxLossCoeff: s.aux,
        moeExpertCapacityFactor: s.capacity,
        moeSharedExpertIntermediateSize: s.sharedFfn > 0 ? s.sharedFfn : null,
        routerSkew: s.skew,
      },
    ),
    h: s.h,
    tokens: l.sp && l.tp > 1 ? (s.s * s.b) / l.tp : s.s * s.b,
    seed: configDefaults.seed,
    layout: l,
    demonstration: s.moeNoSp,
  };
}

/**
 * What `pad` (--moe-pad-expert-input-to-capacity) means for the page's own MoE ranks, or undefined
 * where they have no block or it is off: they run without padding (each expert computes the rows
 * routed to it, after the capacity's drops); the setting prices and emits the cluster panel's rows only.
 */
export function padRanksNote(s: Pick<Settings, 'experts' | 'pad' | 'capacity'>): string | undefined {
  if (!moeOn(s) || !s.pad) return undefined;
  return `--moe-pad-expert-input-to-capacity prices the cluster panel's rows only: the page's own MoE ranks run without padding, each expert computing the rows routed to it${s.capacity === null ? '' : ' (those over capacity dropped)'}, and the page's MoE command leaves the flag out.`;
}

/** A message for one control; `fields` every control involved (the page prefers the one just changed). */
export interface MoeIssue {
  readonly field: keyof Settings;
  readonly fields: readonly (keyof Settings)[];
  readonly message: string;
}

/** The page control of each flag a MoE rule reads (flags the page never sets have none). */
const flagField: Partial<Record<MoeRuleFlag, keyof Settings>> = {
  '--num-experts': 'experts',
  '--moe-router-topk': 'topk',
  '--moe-ffn-hidden-size': 'moeFfn',
  '--moe-shared-expert-intermediate-size': 'sharedFfn',
  '--expert-model-parallel-size': 'ep',
  '--expert-tensor-parallel-size': 'etp',
  '--tensor-model-parallel-size': 'tp',
  '--sequence-parallel': 'sp',
  '--moe-token-dispatcher-type': 'dispatcher',
  '--moe-expert-capacity-factor': 'capacity',
};

/** Divisors of n up to maxMeshRanks (the degrees a select offers). */
const divisors = (n: number): number[] =>
  Array.from({ length: Math.min(n, maxMeshRanks) }, (_, i) => i + 1).filter((d) => n % d === 0);

/** The ranks of a layout with EP and ETP replaced, lcm(t, ETP·EP). */
const ranksWith = (s: Settings, ep: number, etp: number): number => moeWorld({ ...moeLayoutOf(s), ep, etp });

/** EP degrees that split E and, with ETP and t, fold onto at most maxMeshRanks ranks. */
export const legalEp = (s: Settings): number[] =>
  divisors(s.experts).filter((ep) => ranksWith(s, ep, s.etp) <= maxMeshRanks);

/** ETP degrees that split f_moe and, with EP and t, fold onto at most maxMeshRanks ranks. */
export const legalEtp = (s: Settings): number[] =>
  divisors(expertFfn(s)).filter((etp) => etp <= maxMeshRanks && ranksWith(s, s.ep, etp) <= maxMeshRanks);

/** The values of `field` that would pass, in words that follow "legal here:". */
function legalText(field: keyof Settings, s: Settings): string {
  const list = (xs: readonly number[]): string => (xs.length ? xs.join(', ') : `none at t = ${s.tp}`);
  switch (field) {
    case 'experts':
      return `a multiple of EP = ${s.ep} (${[1, 2, 3].map((m) => m * s.ep).join(', ')}, …)`;
    case 'topk':
      return `1 to ${s.experts}`;
    case 'ep':
      return list(legalEp(s));
    case 'etp':
      return list(legalEtp(s));
    case 'moeFfn':
      return `a multiple of ETP = ${s.etp}`;
    case 'tp':
    case 'sp':
      return 'turn SP on, or the M036 demonstration to see why';
    case 'capacity':
      return 'off, or a factor > 0 such as 1 or 1.25';
    case 'dispatcher':
      return s.ep * s.etp > 1 ? 'alltoall, allgather' : 'alltoall, allgather (flex needs ETP·EP > 1)';
    default:
      return 'see the rule';
  }
}

/**
 * The largest expert weights the page builds, in float32 values (1 GiB): every rank holds the
 * logical weights to check against the one-device oracle, and E·3·h·f_moe grows past what a tab
 * can hold long before Megatron's rules object.
 */
export const expertWeightsCap = 2 ** 28;

/**
 * Every issue of the page's MoE settings on its t ranks: Megatron's refusals (moeRefusals, each with
 * its core_v0.19.0 line) placed at the control of the flag they name first, with the legal values;
 * the M036 switch's own needs; the weights cap. With the M036 demonstration on, Megatron's refusal of
 * TP without SP is a note, not an issue: the page runs it to show why it is refused; so is the cluster's
 * padding to capacity (padRanksNote, at the capacity control: the ranks do not pad).
 */
export function moeIssues(s: Settings): { issues: MoeIssue[]; notes: MoeIssue[] } {
  const issues: MoeIssue[] = [];
  const notes: MoeIssue[] = [];
  if (!moeOn(s)) {
    if (s.moeNoSp)
      issues.push({
        field: 'moeNoSp',
        fields: ['moeNoSp', 'experts'],
        message: 'The M036 demonstration routes MoE tokens: give experts ≥ 1 (or a MoE preset) or switch it off.',
      });
    return { issues, notes };
  }
  const moe = moeSetupOf(s)!;
  const refusals = moeRefusals(moe, {
    tp: s.tp,
    sp: s.sp && !s.moeNoSp,
    pp: 1,
    vpp: 1,
    gpus: moeRanks(s),
    layers: 1,
    fullRecompute: false,
    halfPrecision: true,
    biases: false,
  });
  for (const r of refusals) {
    const fields = r.flags.flatMap((f) => (flagField[f] ? [flagField[f]] : []));
    const field = fields[0] ?? 'experts';
    const noSp = r.flags.includes('--sequence-parallel');
    if (noSp && s.moeNoSp) {
      notes.push({
        field: 'moeNoSp',
        fields: ['moeNoSp'],
        message: `Megatron refuses this in training (${r.source}): "${r.message}" Here it runs to show why: each of the t = ${s.tp} ranks routes every token of the sequence again.`,
      });
      continue;
    }
    const legal = legalText(field, s);
    const name = field === 'ep' || field === 'etp' ? `${field.toUpperCase()} ` : '';
    issues.push({ field, fields, message: `${r.message} (${r.source}) Legal here: ${name}${legal}.` });
  }
  if (!pageRanksDispatch(s.dispatcher))
    issues.push({
      field: 'dispatcher',
      fields: ['dispatcher'],
      message: `--moe-token-dispatcher-type ${s.dispatcher} (DeepEP) is priced by the cluster panel only: the page's ranks run alltoall or allgather. Legal here: alltoall, allgather (or experts 0 to keep ${s.dispatcher} for the cluster model).`,
    });
  const pad = padRanksNote(s);
  if (pad) notes.push({ field: 'capacity', fields: ['capacity', 'pad'], message: pad });
  if (moeRanks(s) > maxMeshRanks)
    issues.push({
      field: 'ep',
      fields: ['ep', 'etp', 'tp'],
      message: `t = ${s.tp} and ETP·EP = ${s.etp}·${s.ep} fold onto lcm = ${moeRanks(s)} ranks, more than the ${maxMeshRanks} the page runs. Legal here: EP ${legalText('ep', s)}; ETP ${legalText('etp', s)}.`,
    });
  if (s.moeNoSp && s.tp === 1)
    issues.push({
      field: 'moeNoSp',
      fields: ['moeNoSp', 'tp'],
      message:
        'The M036 demonstration needs t ≥ 2: at t = 1 each token is routed once with or without SP. Pick t = 2 or more.',
    });
  // What the ranks cannot run yet (session/moe-run.ts): a note, not an issue, so the rest of the layer still runs.
  if (!issues.length)
    for (const message of moeRunErrors(moeRunArgsOf(s)))
      notes.push({ field: 'ep', fields: ['ep'], message: `The ranks cannot run this MoE block yet: ${message}` });
  const h = s.h;
  const weights = s.experts * 3 * h * expertFfn(s) + 3 * h * s.sharedFfn;
  if (weights > expertWeightsCap)
    issues.push({
      field: 'moeFfn',
      fields: ['moeFfn', 'experts', 'sharedFfn', 'h'],
      message: `The experts' weights (E·3·h·f_moe + 3·h·shared = ${weights.toExponential(2)} values) are more than the page's ${expertWeightsCap} (1 GiB of float32): lower moeffn, experts or shared.`,
    });
  return { issues, notes };
}

/** The MoE fields of Settings, as a preset sets them. */
type MoeFields = Pick<
  Settings,
  | 'experts'
  | 'topk'
  | 'moeFfn'
  | 'ep'
  | 'etp'
  | 'capacity'
  | 'dispatcher'
  | 'sharedFfn'
  | 'score'
  | 'aux'
  | 'skew'
  | 'moeNoSp'
>;

/** A MoE preset: a layer preset, size and degree overrides, and the MoE fields. */
export interface MoePreset {
  readonly label: string;
  readonly preset: PresetName;
  readonly sizes: Partial<Pick<Settings, 's' | 'b' | 'h' | 'heads' | 'groups' | 'ffn' | 'vocab'>>;
  readonly tp: number;
  readonly sp: boolean;
  readonly moe: MoeFields;
}

const denseMoe: MoeFields = {
  experts: 0,
  topk: 2,
  moeFfn: 0,
  ep: 1,
  etp: 1,
  capacity: null,
  dispatcher: 'alltoall',
  sharedFfn: 0,
  score: 'softmax',
  aux: 0,
  skew: 0,
  moeNoSp: false,
};

/**
 * The MoE presets, each small enough to run on the page's ranks:
 * - classroom: the classroom layer (8 tokens a rank) at t = 1, 8 experts of width 16, top-2, EP 4 over
 *   4 ranks (2 experts a rank, attention data-parallel over them), aux loss 0.01 — every routing
 *   decision fits on a slide;
 * - Mixtral-shaped (Mixtral 8x7B, config.json: 8 experts, top-2, expert width 14336 = 3.5·h,
 *   32 heads over 8 KV groups, router_aux_loss_coef 0.02): the llama-gqa layer (h 256, 8 heads over
 *   2 groups, the same 4:1) with 8 experts of 3.5·256 = 896, top-2, EP 2;
 * - DeepSeek-shaped (DeepSeek-V3, config.json: 256 routed experts of 2048 at h 7168 = 0.29·h, top-8,
 *   one shared expert of 2048, sigmoid scores, seq_aux 1e-4): the llama-gqa layer with 32 experts of 64
 *   (0.25·h), top-4, a shared expert of 64, sigmoid, EP 4 (8 experts a rank).
 * All at t = 1, so the attention is data-parallel over the experts' ranks; t, SP and ETP are the user's to add.
 */
export const moePresets = {
  dense: { label: 'dense MLP', preset: 'classroom', sizes: {}, tp: 2, sp: false, moe: denseMoe },
  classroom: {
    label: 'classroom MoE',
    preset: 'classroom',
    sizes: {},
    tp: 1,
    sp: false,
    moe: { ...denseMoe, experts: 8, topk: 2, moeFfn: 16, ep: 4, aux: 0.01 },
  },
  mixtral: {
    label: 'Mixtral-shaped',
    preset: 'llama-gqa',
    sizes: {},
    tp: 1,
    sp: false,
    moe: { ...denseMoe, experts: 8, topk: 2, moeFfn: 896, ep: 2, aux: 0.02 },
  },
  deepseek: {
    label: 'DeepSeek-shaped',
    preset: 'llama-gqa',
    sizes: {},
    tp: 1,
    sp: false,
    moe: { ...denseMoe, experts: 32, topk: 4, moeFfn: 64, sharedFfn: 64, ep: 4, score: 'sigmoid', aux: 1e-4 },
  },
} as const satisfies Record<string, MoePreset>;

/** A MoE preset's name. */
export type MoePresetName = keyof typeof moePresets;

/** Every MoE preset, in display order. */
export const moePresetNames = Object.keys(moePresets) as MoePresetName[];

/** Settings with a MoE preset: its layer preset and sizes, t and SP, and every MoE field. */
export function withMoePreset(s: Settings, name: MoePresetName): Settings {
  const p: MoePreset = moePresets[name];
  return { ...withPreset(s, p.preset), ...p.sizes, tp: p.tp, sp: p.sp, ...p.moe };
}

/** The MoE preset `s` matches exactly, if any (the select shows it). */
export function moePresetOf(s: Settings): MoePresetName | undefined {
  return moePresetNames.find((n) => {
    const w = withMoePreset(s, n);
    return (Object.keys(w) as (keyof Settings)[]).every((k) => w[k] === s[k]);
  });
}

/** How Megatron-LM's run of the exported MoE flags still differs from the page's MoE block (one sentence each). */
export function moeExportCaveats(s: Settings): string[] {
  if (!moeOn(s)) return [];
  const out: string[] = [];
  if (s.skew !== 0)
    out.push(
      `Router skew ${s.skew}: the page's own bias on the router logits (expert 0 +${s.skew} … expert ${s.experts - 1} −${s.skew}); Megatron has no such flag, so the command routes without it.`,
    );
  if (s.moeNoSp && s.tp > 1)
    out.push(
      `M036 demonstration: the page runs the MoE region without SP at t = ${s.tp}; Megatron refuses MoE with TP > 1 and no --sequence-parallel in training (moe_layer.py:629-632), so the command keeps the page's SP setting for the whole layer.`,
    );
  out.push(
    'Top-k ties: the page picks the higher score, then the lower expert index; torch.topk on a GPU does not promise an order among equal scores.',
  );
  return out;
}
