// Mixture of Experts in Megatron-Core's terms (core_v0.19.0): the flags of a MoE job, the layer
// pattern, the expert mesh and the rules Megatron refuses a MoE layout by, each with its source line.

/** --moe-token-dispatcher-type (transformer_config.py:862; default allgather). */
export type TokenDispatcher = 'alltoall' | 'allgather' | 'flex';

/** Every token dispatcher. */
export const tokenDispatchers: readonly TokenDispatcher[] = ['alltoall', 'allgather', 'flex'];

/**
 * A MoE job's flags, spelled as core_v0.19.0 spells them (arguments.py _add_moe_args and the
 * TransformerConfig / ModelParallelConfig fields ArgumentGroupFactory turns into flags).
 */
export interface MoeSetup {
  /** E: --num-experts. */
  readonly experts: number;
  /** k: --moe-router-topk (transformer_config.py:739, default 2). */
  readonly topk: number;
  /** F_e: --moe-ffn-hidden-size, one expert's FFN (arguments.py:1595-1596: default --ffn-hidden-size). */
  readonly ffn: number;
  /** F_s: --moe-shared-expert-intermediate-size, all shared experts' FFN together (absent: none). */
  readonly sharedFfn?: number;
  /**
   * --moe-layer-freq: N (every N-th layer from layer 0 is MoE) or the pattern, 1 MoE and 0 dense
   * per layer (gpt_layer_specs.py:647-657). Default 1: every layer.
   */
  readonly layerFreq: number | readonly (0 | 1)[];
  /** --moe-expert-capacity-factor (absent: dropless, transformer_config.py:888). */
  readonly capacityFactor?: number;
  /**
   * --moe-pad-expert-input-to-capacity (transformer_config.py:892): every expert takes exactly its
   * capacity from each rank, padded (drop-and-pad); needs a capacity factor (:1686-1690).
   */
  readonly padToCapacity?: boolean;
  readonly dispatcher: TokenDispatcher;
  /** --moe-grouped-gemm: one grouped GEMM over the local experts (else one GEMM per expert, SequentialMLP). */
  readonly groupedGemm: boolean;
  /** --moe-router-score-function (transformer_config.py default softmax; absent: softmax). */
  readonly scoreFunction?: 'softmax' | 'sigmoid';
  /** --moe-router-pre-softmax: softmax over all E before top-k (Megatron requires it at k = 1 with softmax). */
  readonly preSoftmax?: boolean;
  /** --moe-aux-loss-coeff (carried to the command; its loss is a few small kernels, not priced). */
  readonly auxLossCoeff: number;
  /** EP: --expert-model-parallel-size. */
  readonly ep: number;
  /** ETP: --expert-tensor-parallel-size (absent: t, arguments.py:569-570). */
  readonly etp?: number;
  /** --overlap-moe-expert-parallel-comm: EP all-to-alls under another micro-batch's compute. */
  readonly overlapEpComm: boolean;
  /** --moe-shared-expert-overlap: the shared experts on a side stream beside dispatch and combine. */
  readonly sharedExpertOverlap: boolean;
  /**
   * What-if load imbalance (no Megatron flag): tokens the busiest EP rank's experts receive over
   * the mean, ≥ 1 (1: uniform routing, what an ideally balanced router gives).
   */
  readonly imbalance: number;
}

/** MoE defaults for E experts of FFN `ffn` (Megatron's defaults, EP 1). */
export const moeDefaults = (experts: number, ffn: number): MoeSetup => ({
  experts,
  topk: 2,
  ffn,
  layerFreq: 1,
  dispatcher: 'allgather',
  groupedGemm: false,
  auxLossCoeff: 0,
  ep: 1,
  overlapEpComm: false,
  sharedExpertOverlap: false,
  imbalance: 1,
});

/** Which of L layers are MoE (gpt_layer_specs.py:647-657): i % N == 0 for an integer N, else the pattern. */
export function moeLayerPattern(freq: MoeSetup['layerFreq'], layers: number): boolean[] {
  if (typeof freq === 'number') return Array.from({ length: layers }, (_, i) => i % freq === 0);
  if (freq.length !== layers)
    throw new Error(
      `--moe-layer-freq gives ${freq.length} layers, the model has ${layers} (gpt_layer_specs.py:653: the pattern needs one entry per layer).`,
    );
  return freq.map((x) => x === 1);
}

/**
 * Parses --moe-layer-freq as arguments.py:326 moe_freq_type does: an integer, or a Python list
 * expression of 0 and 1 ("([0]*3+[1]*58)", "[1,0,1]"), evaluated here for the forms lists of
 * 0/1 with `*` repetition and `+` concatenation take.
 */
export function parseMoeLayerFreq(text: string): MoeSetup['layerFreq'] {
  const t = text.replace(/\s+/g, '');
  if (/^\d+$/.test(t)) {
    const n = Number(t);
    if (n < 1) throw new Error(`--moe-layer-freq ${text}: an integer N ≥ 1 (one MoE layer every N), or a 0/1 list.`);
    return n;
  }
  let pos = 0;
  const fail = (): never => {
    throw new Error(
      `--moe-layer-freq ${text}: write an integer N or a list of 0 (dense) and 1 (MoE) such as "([0]*3+[1]*58)".`,
    );
  };
  const sum = (): number[] => {
    let out = product();
    while (t[pos] === '+') {
      pos++;
      out = out.concat(product());
    }
    return out;
  };
  const product = (): number[] => {
    let out = atom();
    while (t[pos] === '*') {
      pos++;
      const m = /^\d+/.exec(t.slice(pos)) ?? fail();
      pos += m[0].length;
      out = Array.from({ length: Number(m[0]) }, () => out).flat();
    }
    return out;
  };
  const atom = (): number[] => {
    if (t[pos] === '(') {
      pos++;
      const v = sum();
      if (t[pos++] !== ')') fail();
      return v;
    }
    if (t[pos] !== '[') fail();
    pos++;
    const items: number[] = [];
    while (t[pos] !== ']') {
      const c = t[pos++];
      if (c !== '0' && c !== '1') fail();
      items.push(Number(c));
      if (t[pos] === ',') pos++;
    }
    pos++;
    return items;
  };
  const v = sum();
  if (pos !== t.length || v.length === 0) fail();
  return v as (0 | 1)[];
}

/** --moe-layer-freq as a launch line writes it: N, or the list. */
export const moeLayerFreqText = (f: MoeSetup['layerFreq']): string =>
  typeof f === 'number' ? `${f}` : `[${f.join(',')}]`;

/**
 * The expert mesh (parallel_state.py:870-897): the same N ranks as t·cp·DP·p, regrouped as
 * ETP · EP · EDP · p (order tp-cp-ep-dp-pp with cp = 1 for experts), so an EP group's members
 * are ETP ranks apart and EDP = N / (ETP · EP · p).
 */
export interface ExpertDegrees {
  readonly etp: number;
  readonly ep: number;
  readonly edp: number;
  /** E / EP experts on each rank. */
  readonly localExperts: number;
}

/** The expert mesh of `moe` on N GPUs with t and p (no checks: see moeRefusals). */
export function expertDegrees(moe: MoeSetup, tp: number, pp: number, gpus: number): ExpertDegrees {
  const etp = moe.etp ?? tp;
  return { etp, ep: moe.ep, edp: gpus / (etp * moe.ep * pp), localExperts: moe.experts / moe.ep };
}

/** What a MoE rule reads of the job besides the MoE flags. */
export interface MoeJob {
  readonly tp: number;
  readonly sp: boolean;
  readonly pp: number;
  readonly vpp: number;
  readonly gpus: number;
  readonly layers: number;
  /** --recompute-granularity full. */
  readonly fullRecompute: boolean;
  /** bf16 or fp16 (not fp32). */
  readonly halfPrecision: boolean;
  /** --add-bias-linear (GPT's biases). */
  readonly biases: boolean;
}

/** One Megatron refusal: its source line at core_v0.19.0, its reason and the flags it involves (the one to change first first). */
export interface MoeRefusal {
  readonly source: string;
  readonly message: string;
  readonly flags: readonly MoeRuleFlag[];
}

/** A flag a MoE rule reads ('--moe-imbalance' is the projection's what-if, not Megatron's). */
export type MoeRuleFlag =
  | '--num-experts'
  | '--moe-router-topk'
  | '--moe-ffn-hidden-size'
  | '--moe-shared-expert-intermediate-size'
  | '--expert-model-parallel-size'
  | '--expert-tensor-parallel-size'
  | '--tensor-model-parallel-size'
  | '--pipeline-model-parallel-size'
  | '--sequence-parallel'
  | '--add-bias-linear'
  | '--moe-shared-expert-overlap'
  | '--moe-token-dispatcher-type'
  | '--moe-expert-capacity-factor'
  | '--moe-pad-expert-input-to-capacity'
  | '--moe-imbalance'
  | '--overlap-moe-expert-parallel-comm'
  | '--moe-layer-freq';

const A = 'megatron/training/arguments.py';
const TC = 'megatron/core/transformer/transformer_config.py';

/**
 * Every rule of core_v0.19.0 the MoE flags of `moe` break for `job`, in Megatron's words, with
 * the file and line that refuse it; [] when Megatron starts the job.
 */
export function moeRefusals(moe: MoeSetup, job: MoeJob): MoeRefusal[] {
  const out: MoeRefusal[] = [];
  const fail = (source: string, message: string, ...flags: MoeRuleFlag[]): void =>
    void out.push({ source, message, flags });
  const whole = (x: number, min: number): boolean => Number.isInteger(x) && x >= min;
  const etp = moe.etp ?? job.tp;
  if (!whole(moe.experts, 1))
    fail(`${TC}:1531`, `num_moe_experts must be non-negative (--num-experts ${moe.experts}).`, '--num-experts');
  if (!whole(moe.topk, 1) || moe.topk > moe.experts)
    fail(
      'megatron/core/transformer/moe/router.py:171',
      `--moe-router-topk (${moe.topk}) must be a whole number between 1 and --num-experts (${moe.experts}): torch.topk picks k of E scores.`,
      '--moe-router-topk',
      '--num-experts',
    );
  if (!whole(moe.ffn, 1))
    fail(`${A}:1595`, `--moe-ffn-hidden-size (${moe.ffn}) must be a whole number ≥ 1.`, '--moe-ffn-hidden-size');
  if (moe.sharedFfn !== undefined && !whole(moe.sharedFfn, 1))
    fail(
      `${TC}:1638`,
      `moe_shared_expert_intermediate_size must be num_shared_experts * ffn_size_of_each_shared_expert, but got ${moe.sharedFfn}.`,
      '--moe-shared-expert-intermediate-size',
    );
  if (!whole(moe.ep, 1) || !whole(etp, 1))
    fail(
      `${A}:1600`,
      `--expert-model-parallel-size (${moe.ep}) and --expert-tensor-parallel-size (${etp}) are whole numbers ≥ 1.`,
      '--expert-model-parallel-size',
      '--expert-tensor-parallel-size',
    );
  if (moe.experts % moe.ep !== 0)
    fail(
      `${A}:1602-1603`,
      `Number of experts should be a multiple of expert model parallel_size (${moe.experts} experts, EP ${moe.ep}).`,
      '--expert-model-parallel-size',
      '--num-experts',
    );
  if (job.gpus % (etp * moe.ep * job.pp) !== 0)
    fail(
      'megatron/core/parallel_state.py:881-883',
      `world_size (${job.gpus}) is not divisible by expert_tensor_model_pipeline_parallel size (ETP·EP·p = ${etp}·${moe.ep}·${job.pp} = ${etp * moe.ep * job.pp}).`,
      '--expert-tensor-parallel-size',
      '--expert-model-parallel-size',
      '--pipeline-model-parallel-size',
    );
  if (moe.ffn % etp !== 0)
    fail(
      'megatron/core/tensor_parallel/layers.py:965',
      `the expert FFN (${moe.ffn}) is not divisible by ETP (${etp}).`,
      '--expert-tensor-parallel-size',
      '--moe-ffn-hidden-size',
    );
  if (job.tp > 1 && !job.sp)
    fail(
      'megatron/core/transformer/moe/moe_layer.py:629-632',
      'During training, performance may degrade if MoE and tensor parallelism are enabled without also enabling sequence parallelism (give --sequence-parallel).',
      '--sequence-parallel',
      '--tensor-model-parallel-size',
    );
  if (job.biases && etp !== 1)
    fail(
      `${TC}:2279-2282`,
      'Bias in Moe is only supported when ETP==1.',
      '--expert-tensor-parallel-size',
      '--add-bias-linear',
    );
  if (moe.sharedFfn !== undefined && moe.sharedExpertOverlap && moe.dispatcher === 'allgather')
    fail(
      `${TC}:1644-1649`,
      'moe_shared_expert_overlap only works with alltoall or flex token dispatcher.',
      '--moe-shared-expert-overlap',
      '--moe-token-dispatcher-type',
    );
  if (moe.sharedExpertOverlap && moe.sharedFfn === undefined)
    fail(
      `${TC}:1637`,
      '--moe-shared-expert-overlap needs shared experts (--moe-shared-expert-intermediate-size).',
      '--moe-shared-expert-overlap',
      '--moe-shared-expert-intermediate-size',
    );
  if (moe.dispatcher === 'flex' && etp * moe.ep <= 1)
    fail(
      'megatron/core/transformer/moe/token_dispatcher.py:1770',
      'DeepEP dispatcher requires TPxEP > 1.',
      '--moe-token-dispatcher-type',
      '--expert-model-parallel-size',
      '--expert-tensor-parallel-size',
    );
  if (moe.capacityFactor !== undefined && !(moe.capacityFactor > 0))
    fail(
      `${TC}:1660-1661`,
      `--moe-expert-capacity-factor (${moe.capacityFactor}) must be > 0 (a negative one means dropless).`,
      '--moe-expert-capacity-factor',
    );
  if (moe.padToCapacity && moe.capacityFactor === undefined)
    fail(
      `${TC}:1686-1690`,
      'moe_expert_capacity_factor must be set to use moe_pad_expert_input_to_capacity (give --moe-expert-capacity-factor CF, e.g. 1.0).',
      '--moe-pad-expert-input-to-capacity',
      '--moe-expert-capacity-factor',
    );
  // The projection's flex dispatcher is DeepEP, Megatron's default backend (transformer_config.py:869).
  if (moe.padToCapacity && moe.dispatcher === 'flex')
    fail(
      `${TC}:1600-1607`,
      'Flex token dispatcher with deepep backend does not support moe_pad_expert_input_to_capacity (use alltoall or allgather).',
      '--moe-pad-expert-input-to-capacity',
      '--moe-token-dispatcher-type',
    );
  if (!(moe.imbalance >= 1))
    fail(
      'projection',
      `the load imbalance (${moe.imbalance}) is the busiest rank's tokens over the mean: ≥ 1.`,
      '--moe-imbalance',
    );
  if (moe.overlapEpComm) {
    if (job.pp > 1 && job.vpp === 1)
      fail(
        `${TC}:2674-2678`,
        'If enabling EP A2A overlap, virtual_pipeline_model_parallel_size must be specified when pipeline_model_parallel_size > 1.',
        '--overlap-moe-expert-parallel-comm',
        '--pipeline-model-parallel-size',
      );
    if (moe.ep <= 1)
      fail(
        `${TC}:2680-2682`,
        'overlap_moe_expert_parallel_comm is only supported with expert model parallelism.',
        '--overlap-moe-expert-parallel-comm',
        '--expert-model-parallel-size',
      );
    if (moe.dispatcher === 'allgather')
      fail(
        `${TC}:2683-2686`,
        'overlap_moe_expert_parallel_comm is supported with alltoall/flex token dispatcher.',
        '--overlap-moe-expert-parallel-comm',
        '--moe-token-dispatcher-type',
      );
    if (job.fullRecompute)
      fail(
        `${TC}:2688-2690`,
        'disable full recomputation when enabling overlap_moe_expert_parallel_comm.',
        '--overlap-moe-expert-parallel-comm',
      );
    if (!job.halfPrecision)
      fail(
        `${TC}:2701-2704`,
        'overlap_moe_expert_parallel_comm is only supported with bf16 or fp16 model.',
        '--overlap-moe-expert-parallel-comm',
      );
    if (moe.sharedExpertOverlap)
      fail(
        `${TC}:2706-2708`,
        'disable moe_shared_expert_overlap when enabling overlap_moe_expert_parallel_comm.',
        '--overlap-moe-expert-parallel-comm',
        '--moe-shared-expert-overlap',
      );
  }
  try {
    moeLayerPattern(moe.layerFreq, job.layers);
  } catch (e) {
    fail('megatron/core/models/gpt/gpt_layer_specs.py:653', (e as Error).message, '--moe-layer-freq');
  }
  return out;
}

/** The MoE flags of a launch line (defaults left out, as a launch line has them). */
export function moeFlags(moe: MoeSetup, tp: number): string[] {
  const f = [
    `--num-experts ${moe.experts}`,
    `--moe-router-topk ${moe.topk}`,
    `--moe-ffn-hidden-size ${moe.ffn}`,
    `--expert-model-parallel-size ${moe.ep}`,
    `--moe-token-dispatcher-type ${moe.dispatcher}`,
    `--moe-aux-loss-coeff ${moe.auxLossCoeff}`,
  ];
  if ((moe.etp ?? tp) !== tp) f.push(`--expert-tensor-parallel-size ${moe.etp}`);
  if (moe.layerFreq !== 1) f.push(`--moe-layer-freq ${moeLayerFreqText(moe.layerFreq)}`);
  if (moe.sharedFfn !== undefined) f.push(`--moe-shared-expert-intermediate-size ${moe.sharedFfn}`);
  if (moe.capacityFactor !== undefined) f.push(`--moe-expert-capacity-factor ${moe.capacityFactor}`);
  if (moe.padToCapacity) f.push('--moe-pad-expert-input-to-capacity');
  if (moe.groupedGemm) f.push('--moe-grouped-gemm');
  if (moe.scoreFunction !== undefined && moe.scoreFunction !== 'softmax')
    f.push(`--moe-router-score-function ${moe.scoreFunction}`);
  if (moe.preSoftmax) f.push('--moe-router-pre-softmax');
  if (moe.overlapEpComm) f.push('--overlap-moe-expert-parallel-comm');
  if (moe.sharedExpertOverlap) f.push('--moe-shared-expert-overlap');
  return f;
}

/** The MoE flags as argv (flag, value, flag, …). */
export const moeArgv = (moe: MoeSetup, tp: number): string[] => moeFlags(moe, tp).flatMap((f) => f.split(' '));

/**
 * The MoE flags of a launch's arguments (`get` reads one flag: its value, true for a switch,
 * undefined when absent) as arguments.py and the config dataclasses default them; undefined
 * without --num-experts (arguments.py:1593-1594 also reads 0 as none).
 */
export function moeFromFlags(get: (flag: string) => string | true | undefined, ffn: number): MoeSetup | undefined {
  const text = (flag: string): string | undefined => {
    const v = get(flag);
    return typeof v === 'string' ? v : undefined;
  };
  const experts = Number(text('--num-experts') ?? 0);
  if (!experts) return undefined;
  const num = (flag: string): number | undefined => (text(flag) === undefined ? undefined : Number(text(flag)));
  const dispatcher = text('--moe-token-dispatcher-type') ?? 'allgather';
  const freq = text('--moe-layer-freq');
  return {
    ...moeDefaults(experts, num('--moe-ffn-hidden-size') ?? ffn),
    topk: num('--moe-router-topk') ?? 2,
    ...(num('--moe-shared-expert-intermediate-size') !== undefined && {
      sharedFfn: num('--moe-shared-expert-intermediate-size'),
    }),
    ...(freq !== undefined && { layerFreq: parseMoeLayerFreq(freq) }),
    ...(num('--moe-expert-capacity-factor') !== undefined && { capacityFactor: num('--moe-expert-capacity-factor') }),
    ...(get('--moe-pad-expert-input-to-capacity') !== undefined && { padToCapacity: true }),
    dispatcher: (tokenDispatchers as readonly string[]).includes(dispatcher)
      ? (dispatcher as TokenDispatcher)
      : 'allgather',
    groupedGemm: get('--moe-grouped-gemm') !== undefined,
    ...(text('--moe-router-score-function') === 'sigmoid' && { scoreFunction: 'sigmoid' as const }),
    ...(get('--moe-router-pre-softmax') !== undefined && { preSoftmax: true }),
    auxLossCoeff: num('--moe-aux-loss-coeff') ?? 0,
    ep: num('--expert-model-parallel-size') ?? 1,
    ...(num('--expert-tensor-parallel-size') !== undefined && { etp: num('--expert-tensor-parallel-size') }),
    overlapEpComm: get('--overlap-moe-expert-parallel-comm') !== undefined,
    sharedExpertOverlap: get('--moe-shared-expert-overlap') !== undefined,
  };
}
