// The model the cluster panel, the advisor, the ablation and the machine picture project (sizes, depth, MoE, MLA), as `npm run project` has it from --scenario or --hf-config, and its issues at their controls.
import { moeFlags, moeRefusals, type MoeRuleFlag, type MoeSetup } from '../../megatron/moe.ts';
import { mlaFromHf, type MlaSetup } from '../../megatron/mla.ts';
import { hfJobSizes, hfJobDefaults, moeFromHf, parseHfConfig, type HfModel } from '../../megatron/hf-config.ts';
import type { ModelSizes } from '../../parallel/config.ts';
import type { TrainingSetup } from '../../megatron/training-setup.ts';
import {
  builtinHfConfig,
  clusterModelName,
  hfPasted,
  scenarioSizes,
  type ScenarioChoice,
} from './cluster-model-choice.ts';
import { placeIssues, type ControlField, type FieldIssue } from './field-issues.ts';
import { moeSetupOf } from './moe-settings.ts';
import { pastedHfModel } from './pasted-hf-config.ts';
import type { Settings } from './state.ts';

/** What the cluster projects: the sizes (with s and b), L, the MoE and MLA flags, tied embeddings, and where each came from. */
export interface ClusterModelSpec {
  readonly sizes: ModelSizes;
  /** L: transformer layers. */
  readonly layers: number;
  /** The MoE flags (absent: dense): a config's experts with the page's EP and ETP, or the page layer's MoE block. */
  readonly moe?: MoeSetup;
  readonly mla?: MlaSetup;
  readonly tiedEmbeddings?: boolean;
  /** The config read, for a Hugging Face model: its notes and unknown fields. */
  readonly hf?: HfModel;
  /** Where s, b and L come from, one clause for the panel's caption. */
  readonly from: string;
}

/**
 * The deepest and widest config taken: 1024 layers (8× Llama 3.1 405B's 126, the deepest public
 * config here) and 4096 experts (16× DeepSeek-V3's 256); a config past them is refused at the
 * control, as the projection lays out a list of L layers and the advisor a range of EP per model.
 */
export const hfCaps = { layers: 1024, experts: 4096 } as const;

/** The page settings a config's experts are priced with. */
type ClusterMoeSettings = Pick<
  Settings,
  'ep' | 'etp' | 'dispatcher' | 'capacity' | 'pad' | 'gg' | 'epov' | 'seov' | 'imb'
>;

/**
 * The page's MoE flags over a config's experts (`npm run project`'s flags of the same names): EP, ETP,
 * the dispatcher and capacity factor (one setting each with the page's MoE block), the padding to
 * capacity, grouped GEMM, the EP-communication and shared-expert overlaps, and the load-imbalance what-if.
 */
const clusterMoeFlags = (s: ClusterMoeSettings): Partial<MoeSetup> => ({
  ep: s.ep,
  etp: s.etp,
  dispatcher: s.dispatcher,
  ...(s.capacity !== null && { capacityFactor: s.capacity }),
  ...(s.pad && { padToCapacity: true }),
  groupedGemm: s.gg,
  overlapEpComm: s.epov,
  sharedExpertOverlap: s.seov,
  imbalance: s.imb,
});

/** The spec of a config.json's model with the page's MoE flags. */
function hfSpec(hf: HfModel, s: ClusterMoeSettings, name: string): ClusterModelSpec {
  const { layers, sizes } = hf.model;
  if (layers > hfCaps.layers)
    throw new Error(
      `${name}: num_hidden_layers ${layers} is more than the ${hfCaps.layers} taken here (8× Llama 3.1 405B's 126): write ${hfCaps.layers} or fewer.`,
    );
  if (hf.moe && hf.moe.experts > hfCaps.experts)
    throw new Error(
      `${name}: ${hf.moe.experts} experts are more than the ${hfCaps.experts} taken here (16× DeepSeek-V3's 256): write ${hfCaps.experts} or fewer.`,
    );
  const job = hfJobSizes(hf);
  const s0 = job.s;
  return {
    sizes: { ...sizes, ...job },
    layers,
    ...(hf.moe && { moe: { ...moeFromHf(hf.moe, layers), ...clusterMoeFlags(s) } }),
    ...(hf.mla && { mla: mlaFromHf(hf.mla) }),
    tiedEmbeddings: hf.tiedEmbeddings,
    hf,
    from: `L ${layers} from its num_hidden_layers; s ${s0} and b ${hfJobDefaults.b} from ${hfJobDefaults.source}${s0 < hfJobDefaults.s ? `, s cut to max_position_embeddings ${s0}` : ''}`,
  };
}

/**
 * The cluster model of the page's settings: a scenario's sizes over the page's L; a built-in or
 * pasted config.json read by the CLI's reader (L from the config, s and b hfJobDefaults, its
 * experts with the page's ep and etp — one setting per meaning, as p and v are the mesh's and the
 * cluster's — and its multi-latent attention); or the page's own layer, with its MoE block when it
 * has one. Throws what to change: no pasted config in this tab, a config the projection cannot price.
 */
export function clusterModelOf(s: Settings): ClusterModelSpec {
  const c = s.cmodel;
  if (c === 'layer') {
    const { s: seq, b, h, heads, groups, ffn, vocab } = s;
    // The block's own flags (it runs one grouped GEMM on the ranks), with the cluster's padding, overlaps and imbalance.
    const block = moeSetupOf(s);
    const moe = block && {
      ...block,
      ...(s.pad && { padToCapacity: true }),
      overlapEpComm: s.epov,
      sharedExpertOverlap: s.seov,
      imbalance: s.imb,
    };
    return {
      sizes: { s: seq, b, h, heads, groups, ffn, vocab },
      layers: s.layers,
      ...(moe && { moe }),
      from: "the page's sizes and L",
    };
  }
  if (c === hfPasted) return hfSpec(pastedHfModel(), s, 'the pasted config.json');
  const builtin = builtinHfConfig(c);
  if (builtin) {
    const hf = parseHfConfig({ ...builtin.config });
    if (hf.cannotProject.length)
      throw new Error(
        `${builtin.name}: the projection cannot price this model yet: ${hf.cannotProject.join(' ')} Choose another cluster model.`,
      );
    return hfSpec(hf, s, builtin.name);
  }
  return { sizes: scenarioSizes(c as ScenarioChoice), layers: s.layers, from: "the scenario's s and b, the page's L" };
}

/** L of the cluster model, or the page's L where the model cannot be read (clusterModelIssues puts why at its control). */
export function clusterModelLayers(s: Settings): number {
  try {
    return clusterModelOf(s).layers;
  } catch {
    return s.layers;
  }
}

/** The TrainingSetup fields a cluster model sets (the projection's, as `npm run project` fills them). */
export const clusterModelSetup = (
  m: ClusterModelSpec,
): Pick<TrainingSetup, 'sizes' | 'layers' | 'moe' | 'mla' | 'tiedEmbeddings'> => ({
  sizes: m.sizes,
  layers: m.layers,
  ...(m.moe && { moe: m.moe }),
  ...(m.mla && { mla: m.mla }),
  ...(m.tiedEmbeddings !== undefined && { tiedEmbeddings: m.tiedEmbeddings }),
});

/** Flags every row states on its own (EP, ETP) or the panel says in words (the dense layers of --moe-layer-freq). */
const rowWordsFlags = ['--expert-model-parallel-size', '--expert-tensor-parallel-size', '--moe-layer-freq'];

/**
 * The cluster model's MoE flags as the panel's command text writes them (moe.ts moeFlags, Megatron's
 * spelling, defaults left out as a launch line has them) without EP, ETP and the layer pattern, and
 * the load-imbalance what-if in words where it is not 1 (the projection's, no Megatron flag).
 */
export function clusterMoeWords(moe: MoeSetup): string {
  const flags = moeFlags(moe, moe.etp ?? 1).filter((f) => !rowWordsFlags.includes(f.split(' ')[0]!));
  const what =
    moe.imbalance !== 1 ? ` (load imbalance ${moe.imbalance}: the projection's what-if, no Megatron flag)` : '';
  return flags.join(' ') + what;
}

/** The largest EP offered in the legal list: the page's ep cap (state.ts, 64 ranks). */
const maxEp = 64;

/** The settings a MoE rule's flag is set by on the page. */
const flagField: Partial<Record<MoeRuleFlag, ControlField>> = {
  '--expert-model-parallel-size': 'ep',
  '--expert-tensor-parallel-size': 'etp',
  '--pipeline-model-parallel-size': 'pp',
  '--moe-token-dispatcher-type': 'dispatcher',
  '--moe-expert-capacity-factor': 'capacity',
  '--moe-pad-expert-input-to-capacity': 'pad',
  '--overlap-moe-expert-parallel-comm': 'epov',
  '--moe-shared-expert-overlap': 'seov',
  '--moe-imbalance': 'imb',
};

/** The page's cluster-only MoE settings: their rules are priced for the page layer's block too. */
const clusterOnly: readonly ControlField[] = ['pad', 'epov', 'seov', 'imb'];

/**
 * The cluster model's issues at their controls: why it cannot be projected (at cmodel), and Megatron's
 * MoE rules that hold for every row of the panel whatever its t and N (E a multiple of EP, the expert
 * FFN divisible by ETP, the overlaps' dispatcher, EP, v and recompute; moe.ts moeRefusals) at the control
 * of the flag each names first, with the values that pass. The rules that depend on the row (SP with
 * t > 1, ETP·EP·p dividing its N) are the rows'. The page layer's own block has its issues from moeIssues
 * (moe-settings.ts); of its cluster pricing only the rules on the cluster's own settings (padding, overlaps,
 * imbalance) are here.
 */
export function clusterModelIssues(s: Settings, changed?: ControlField): FieldIssue[] {
  let model: ClusterModelSpec;
  try {
    model = clusterModelOf(s);
  } catch (e) {
    return [{ field: 'cmodel', message: e instanceof Error ? e.message : String(e) }];
  }
  const moe = model.moe;
  if (!moe) return [];
  const job = {
    tp: 1,
    sp: false,
    pp: s.pp,
    vpp: s.vpp,
    // Each row has its own N = t·p·cp·d (and the advisor its budget): the rule on N is the rows'.
    gpus: s.etp * s.ep * s.pp,
    layers: model.layers,
    fullRecompute: s.recompute === 'full',
    halfPrecision: s.dtype !== 'fp32',
    biases: false,
  };
  const passes = (ep: number): boolean => moeRefusals({ ...moe, ep }, { ...job, gpus: s.etp * ep * s.pp }).length === 0;
  const legalEp = Array.from({ length: Math.min(moe.experts, maxEp) }, (_, i) => i + 1).filter(passes);
  const legalText = (field: ControlField | undefined): string => {
    switch (field) {
      case 'dispatcher':
        return s.dispatcher === 'flex' ? 'alltoall or allgather, or flex at ETP·EP > 1' : 'alltoall or flex';
      case 'epov':
        return 'EP overlap off, or alltoall/flex with EP > 1, v > 1 at p > 1, no full recompute, bf16/fp16';
      case 'seov':
        return moe.sharedFfn === undefined
          ? 'shared-expert overlap off (this model has no shared experts)'
          : 'shared-expert overlap off, or alltoall/flex without the EP overlap';
      case 'imb':
        return 'imb ≥ 1 (1: uniform routing)';
      case 'pad':
        return 'padding off, or a capacity factor with the alltoall or allgather dispatcher';
      case 'capacity':
        return 'off, or a factor > 0 such as 1 or 1.25';
      default:
        return legalEp.length ? `EP ${legalEp.join(', ')} at ETP ${s.etp}` : `none at ETP ${s.etp}: change ETP or N`;
    }
  };
  const layer = s.cmodel === 'layer';
  return placeIssues(
    moeRefusals(moe, job).flatMap((r) => {
      const fields = r.flags.flatMap((f) => (flagField[f] ? [flagField[f]] : []));
      if (layer && !fields.some((f) => clusterOnly.includes(f))) return [];
      const field = fields.find((f) => clusterOnly.includes(f)) ?? fields[0] ?? 'cmodel';
      return [
        {
          field,
          fields: [...new Set([field, ...fields, 'cmodel' as const])],
          message: `${clusterModelName(s.cmodel)} on the cluster: ${r.message} (${r.source}) Legal here: ${legalText(field)}.`,
        },
      ];
    }),
    changed,
  );
}
