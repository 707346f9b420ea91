// Megatron-LM's own start-up checks, replayed on a launch's arguments: a TypeScript port of each
// assertion of the pinned release (megatronRelease, core_v0.19.0) that the flags this project emits
// can reach, from argument parsing (megatron/training/arguments.py validate_args), the config
// dataclasses (transformer_config.py, model_parallel_config.py), the layer-spec selection
// (gpt_builders.py, models/backends.py) and the modules the spec builds (torch_norm.py,
// fused_layer_norm.py, transformer_block.py, attention.py, dot_product_attention.py,
// tensor_parallel/layers.py), and the MoE rules the MoE flags reach (moe.ts moeRefusals, with
// arguments.py's grouped-GEMM check), FSDP's (fsdp.ts fsdpRefusals and the checkpoint formats it
// asserts), --recompute-modules' (recompute-modules.ts) and Transformer Engine's GPU floor. Each
// rule cites its file and line at the pin, and the fp8/fp4 recipes' (low-precision.ts: Megatron's
// exclusions, Transformer Engine's GPU floors), and --fine-grained-activation-offloading's
// (activation-offload-launch.ts, with its CUDA-graph combinations), and full_iteration's NaN-check
// assert (cuda-graph-rules.ts). Not ported: checks on flags the project never emits (RL).
import { fsdpFromFlags, fsdpRefusals } from './fsdp.ts';
import { flagMap, listAfter } from './megatron-command.ts';
import { parseRecomputeModules, recomputeModuleRefusals } from './recompute-modules.ts';
import {
  defaultFp8Recipe,
  fp8Recipes,
  lowPrecisionRefusal,
  type Fp8Recipe,
  type LinearRecipe,
} from './low-precision.ts';
import { mlaFromFlags, mlaRefusals } from './mla.ts';
import { offloadLaunchRefusals } from './activation-offload-launch.ts';
import { fullIterationNanCheck } from './cuda-graph-rules.ts';
import { moeFromFlags, moeRefusals } from './moe.ts';

/** Where the job runs: what is installed, the GPU, the environment variables and the world size. */
export interface MegatronEnvironment {
  /** torchrun's world size: --nproc-per-node × --nnodes. */
  readonly worldSize: number;
  /** `import transformer_engine` succeeds (HAVE_TE). */
  readonly transformerEngine: boolean;
  /** `import apex` succeeds (HAVE_APEX), with its fused_weight_gradient_mlp_cuda extension. */
  readonly apex: boolean;
  /** PyTorch [major, minor]. */
  readonly torch: readonly [number, number];
  /** CUDA compute capability major (get_device_arch_version): 7 V100, 8 A100, 9 H100, 10 B200. */
  readonly computeCapability: number;
  /** The minor of the compute capability (absent: 0; 5 on Turing, sm_75). */
  readonly computeCapabilityMinor?: number;
  readonly env: Readonly<Record<string, string>>;
  /** Transformer Engine's [major, minor] (absent: unknown; activation-offload-launch.ts says how that is read). */
  readonly transformerEngineVersion?: readonly [number, number];
}

/**
 * An NGC PyTorch container (Transformer Engine and Apex installed, PyTorch ≥ 2.4) on `worldSize`
 * GPUs of compute capability `computeCapability`, with the environment `env`.
 */
export function ngcEnvironment(
  worldSize: number,
  env: Readonly<Record<string, string>>,
  computeCapability = 9,
): MegatronEnvironment {
  return { worldSize, transformerEngine: true, apex: true, torch: [2, 8], computeCapability, env };
}

/** One failed check: the source line at the pin and Megatron's message (or what it asserts). */
export interface MegatronCheckFailure {
  readonly source: string;
  readonly message: string;
}

/** The parsed arguments with argparse's defaults at the pin, for the fields the rules read. */
interface Args {
  readonly flags: ReadonlyMap<string, string | true>;
  num(flag: string, fallback: number): number;
  str(flag: string, fallback: string): string;
  has(flag: string): boolean;
}

function argsOf(argv: readonly string[]): Args {
  const flags = flagMap(argv);
  return {
    flags,
    num: (flag, fallback) => {
      const v = flags.get(flag);
      return typeof v === 'string' ? Number(v) : fallback;
    },
    str: (flag, fallback) => {
      const v = flags.get(flag);
      return typeof v === 'string' ? v : fallback;
    },
    has: (flag) => flags.has(flag),
  };
}

/** --fp8-recipe's choices in argparse's order (transformer_config.py:573, the Literal it is built from). */
const fp8RecipeChoices: readonly (Fp8Recipe | 'custom')[] = ['tensorwise', 'delayed', 'mxfp8', 'blockwise', 'custom'];

/** divide(n, d) of megatron/core/utils.py:556-565: asserts n % d == 0. */
const divides = (n: number, d: number): boolean => Number.isInteger(n) && n % d === 0;

/**
 * Every check of the pinned Megatron-LM release that `argv` (pretrain_gpt.py's arguments) fails in
 * `env`; [] when the job starts as far as these checks go. The layer spec is the one
 * gpt_builders.py picks for --transformer-impl (local or transformer_engine) without MoE.
 */
export function checkMegatronLaunch(argv: readonly string[], env: MegatronEnvironment): MegatronCheckFailure[] {
  const a = argsOf(argv);
  const out: MegatronCheckFailure[] = [];
  const fail = (source: string, message: string): void => void out.push({ source, message });
  const A = 'megatron/training/arguments.py';
  const TC = 'megatron/core/transformer/transformer_config.py';

  // arguments.py: parse. Required arguments and argparse's defaults.
  for (const f of ['--num-layers', '--hidden-size', '--num-attention-heads', '--max-position-embeddings'])
    if (!a.has(f)) fail(`${A}:1274-1277`, `${f} is required (_check_arg_is_not_none).`);
  const tp = a.num('--tensor-model-parallel-size', 1);
  const pp = a.num('--pipeline-model-parallel-size', 1);
  const cp = a.num('--context-parallel-size', 1);
  const h = a.num('--hidden-size', 0);
  const heads = a.num('--num-attention-heads', 1);
  const s = a.num('--seq-length', 0);
  const mbs = a.num('--micro-batch-size', 0);
  const impl = a.str('--transformer-impl', 'transformer_engine');
  const normalization = a.str('--normalization', 'LayerNorm');

  // validate_args.
  const modelSize = tp * pp * cp;
  if (env.worldSize % modelSize !== 0)
    fail(`${A}:430`, `world size (${env.worldSize}) is not divisible by total_model_size (${modelSize}).`);
  const dp = Math.floor(env.worldSize / modelSize);
  if (!(mbs > 0)) fail(`${A}:675-676`, 'micro_batch_size must be given and > 0.');
  const gbs = a.num('--global-batch-size', mbs * dp);
  if (!(gbs > 0)) fail(`${A}:687`, 'global_batch_size must be > 0.');
  if (mbs > 0 && gbs % (mbs * dp) !== 0)
    fail(
      `${A}:694`,
      `eval_global_batch_size (${gbs}) must be divisible by eval_micro_batch_size (${mbs}) * data_parallel_size (${dp}).`,
    );
  if (!a.has('--kv-channels') && h % heads !== 0)
    fail(`${A}:1292`, `hidden_size (${h}) % num_attention_heads (${heads}) must be 0.`);
  if (cp > 1 && s % (2 * cp) !== 0)
    fail(`${A}:1296`, 'seq-length should be a multiple of 2 * context-parallel-size if context-parallel-size > 1.');
  if (a.num('--max-position-embeddings', 0) < s) fail(`${A}:1314`, 'max_position_embeddings must be ≥ seq_length.');
  if (a.has('--lr') && a.num('--min-lr', 0) > a.num('--lr', 0)) fail(`${A}:1320`, 'min_lr must be ≤ lr.');
  if (a.has('--fp16') && a.has('--bf16')) fail(`${A}:1173`, '--fp16 and --bf16 are exclusive.');
  // Low precision (low-precision.ts): fp4 and fp8 exclusive; each recipe on the GPUs Transformer Engine runs it on.
  if (a.has('--fp4-format') && a.has('--fp8-format'))
    fail(`${A}:1065-1066`, '--fp4-format and --fp8-format cannot be used simultaneously. Please choose one.');
  if (
    a.has('--fp8-param-gather') &&
    !(a.has('--use-distributed-optimizer') || a.has('--use-torch-fsdp2') || a.has('--use-megatron-fsdp'))
  )
    fail(
      `${A}:1060-1062`,
      '--fp8-param-gather only supported with distributed optimizer, torch fsdp2, megatron fsdp, or inference mode',
    );
  if (a.has('--fp4-param-gather') && !a.has('--fp4-format'))
    fail(`${A}:1069-1070`, '--fp4-param-gather must be used together with --fp4-format.');
  // MXFP8 parameters cannot be remapped into the distributed optimizer's param buffer: TE's
  // replace_raw_data raises for MXFP8Tensor (v2.17.1 transformer_engine/pytorch/tensor/utils.py:68-69,
  // reached from param_and_grad_buffer.py:1284) unless the gather reuses the gradient buffer.
  if (
    a.has('--fp8-param-gather') &&
    a.has('--fp8-format') &&
    a.str('--fp8-recipe', defaultFp8Recipe) === 'mxfp8' &&
    a.has('--use-distributed-optimizer') &&
    !a.has('--use-megatron-fsdp') &&
    !a.has('--reuse-grad-buf-for-mxfp8-param-ag')
  )
    fail(
      'megatron/core/distributed/param_and_grad_buffer.py:1284',
      'replace_raw_data for MXFP8Tensor is not supported yet: with --fp8-recipe mxfp8 and --fp8-param-gather add --reuse-grad-buf-for-mxfp8-param-ag.',
    );
  // --fp8-recipe: argparse's choices, the config's Literal (transformer_config.py:573-575, made choices
  // by megatron/training/argument_utils.py:151-155); `custom`
  // (a quantizer factory of one's own, :590) is legal and checked no further.
  const recipeText = a.str('--fp8-recipe', defaultFp8Recipe);
  const fp8Recipe = fp8Recipes.find((r) => r === recipeText);
  if (!fp8Recipe && recipeText !== 'custom')
    fail(
      `${TC}:573-575`,
      `argument --fp8-recipe: invalid choice: '${recipeText}' (choose from ${fp8RecipeChoices.map((r) => `'${r}'`).join(', ')}).`,
    );
  const recipe: LinearRecipe | undefined = a.has('--fp4-format')
    ? 'nvfp4'
    : a.has('--fp8-format')
      ? fp8Recipe
      : undefined;
  const lowPrecision =
    recipe && lowPrecisionRefusal(recipe, env.computeCapability + (env.computeCapabilityMinor ?? 0) / 10);
  if (lowPrecision) fail('transformer_engine/pytorch/quantization.py', lowPrecision);
  const granularity = a.has('--recompute-activations') ? 'selective' : a.str('--recompute-granularity', '');
  if (granularity === 'selective' && a.has('--recompute-method'))
    fail(`${A}:1386`, 'recompute method is not yet supported for selective recomputing granularity.');
  // arguments.py:1393-1399 turns --sequence-parallel off at t = 1.
  const sp = a.has('--sequence-parallel') && tp > 1;
  let fsdp;
  try {
    fsdp = fsdpFromFlags((f) => a.flags.get(f));
  } catch (e) {
    fail(`${A}:3023-3025`, (e as Error).message);
  }
  // :1413-1439: before Blackwell, t > 1 or cp > 1 asserts CUDA_DEVICE_MAX_CONNECTIONS=1, except with
  // FSDP or --overlap-moe-expert-parallel-comm, which only warn (they want more connections).
  if (
    (tp > 1 || cp > 1) &&
    env.computeCapability < 10 &&
    !fsdp &&
    !a.has('--overlap-moe-expert-parallel-comm') &&
    env.env.CUDA_DEVICE_MAX_CONNECTIONS !== '1'
  )
    fail(
      `${A}:1437`,
      'Using tensor model parallelism or context parallelism require setting the environment variable CUDA_DEVICE_MAX_CONNECTIONS to 1.',
    );
  if (fsdp) {
    const job = {
      pp,
      ep: a.num('--expert-model-parallel-size', 1),
      distributedOptimizer: a.has('--use-distributed-optimizer'),
      tiedEmbeddings: !a.has('--untie-embeddings-and-output-weights'),
      fp16: a.has('--fp16'),
      // --no-gradient-accumulation-fusion is store_false: fusion is on by default.
      gradAccumulationFusion: !a.has('--no-gradient-accumulation-fusion'),
      cudaDeviceMaxConnections: env.env.CUDA_DEVICE_MAX_CONNECTIONS,
    };
    for (const r of fsdpRefusals(fsdp, job)) fail(r.source, r.message);
    // --ckpt-format defaults to torch_dist (training_config.py:486).
    const ckpt = a.str('--ckpt-format', 'torch_dist');
    if (fsdp.impl === 'megatron' && ckpt !== 'fsdp_dtensor')
      fail(
        `${A}:1146-1147`,
        'Megatron-FSDP requires the `fsdp_dtensor` checkpointing format: give --ckpt-format fsdp_dtensor.',
      );
    if (fsdp.impl === 'torch' && ckpt !== 'torch_dist' && ckpt !== 'torch_dcp')
      fail(`${A}:1008-1009`, '--use-torch-fsdp2 requires --ckpt-format torch_dist or torch_dcp.');
  }
  // Transformer Engine's CUDA 13 builds, which the tag's `te` extra installs (pyproject.toml:126),
  // compile for sm_75 and newer (TransformerEngine CMakeLists.txt:25-31): installed on an older GPU
  // its kernels have no image to run, and Megatron uses it wherever it is installed (the TE spec,
  // and TENorm as the final norm of the local spec, transformer_block.py:53-64).
  const sm = 10 * env.computeCapability + (env.computeCapabilityMinor ?? 0);
  if (env.transformerEngine && sm < 75)
    fail(
      'TransformerEngine CMakeLists.txt:25-31',
      `Transformer Engine's CUDA 13 builds start at sm_75; this GPU is sm_${sm}: run without Transformer Engine installed (--transformer-impl local, no --sequence-parallel), or on a Turing or newer GPU.`,
    );
  const sources = [
    a.has('--mock-data'),
    a.has('--data-path'),
    ['--train-data-path', '--valid-data-path', '--test-data-path'].some(a.has),
  ];
  if (sources.filter(Boolean).length > 1)
    fail(`${A}:1624`, 'A single data source must be provided in training mode, else None.');
  if (a.str('--tokenizer-type', '') === 'NullTokenizer' && !a.has('--vocab-size'))
    fail('megatron/core/tokenizers/text/libraries/null_tokenizer.py', 'NullTokenizer needs --vocab-size.');

  // The profiler (training.py:3663-3692): torch.profiler.schedule(wait = start − 1, warmup = 1,
  // active = end − start) needs active ≥ 1, and the trace is written when the active steps end,
  // so training must run past --profile-step-end.
  if (a.has('--profile') && a.has('--use-pytorch-profiler')) {
    const start = a.num('--profile-step-start', 10);
    const end = a.num('--profile-step-end', 12);
    if (!(end > start))
      fail(
        'megatron/training/training.py:3684',
        `--profile-step-end (${end}) must exceed --profile-step-start (${start}).`,
      );
    if (a.num('--train-iters', 0) < end)
      fail(
        'megatron/training/training.py:3680',
        `--train-iters must reach --profile-step-end (${end}) for the trace to be written.`,
      );
  }

  // argument_utils.py core_transformer_config_from_args → TransformerConfig.__post_init__.
  const persist = !a.has('--no-persist-layer-norm'); // argument_utils.py:304
  const groups = a.has('--group-query-attention') ? a.num('--num-query-groups', heads) : heads; // :328-331, TC:1335
  if (heads % tp !== 0)
    fail(`${TC}:1323`, `num_attention_heads (${heads}) must be a multiple of tensor_model_parallel_size (${tp}).`);
  if (groups % tp !== 0 && tp % groups !== 0)
    fail(
      `${TC}:1338`,
      `num_query_groups (${groups}) must be a multiple or divisor of tensor_model_parallel_size (${tp}).`,
    );
  if (granularity === 'full') {
    const method = a.str('--recompute-method', '');
    if (method !== 'uniform' && method !== 'block')
      fail(`${TC}:1731-1740`, 'Using recompute_granularity: full so recompute_method must be "block" or "uniform".');
    if (!a.has('--recompute-num-layers'))
      fail(
        `${TC}:1742`,
        'When using recompute_granularity: full recompute_num_layers must be between 1 and num_layers_per_pipeline_rank.',
      );
  }
  const ropeFusion = !a.has('--no-rope-fusion') && a.str('--position-embedding-type', 'learned_absolute') === 'rope';
  if (ropeFusion && !env.transformerEngine)
    fail(`${TC}:2165-2186`, 'apply_rope_fusion is not available. Please install TE >= 1.4.');

  // Layer spec (gpt_builders.py:35, :108-145): Transformer Engine's, else the local one.
  const te = impl === 'transformer_engine';
  if (te && !env.transformerEngine)
    fail(
      'megatron/core/extensions/transformer_engine_spec_provider.py',
      '--transformer-impl transformer_engine needs Transformer Engine installed.',
    );
  /** WrappedTorchNorm.__new__ (transformer/torch_norm.py:44-61). */
  const torchNorm = (where: string): void => {
    const T = 'megatron/core/transformer/torch_norm.py';
    if (a.has('--apply-layernorm-1p'))
      fail(`${T}:44`, `${where}: zero_centered_gamma not supported by torch LayerNorm.`);
    if (persist)
      fail(`${T}:48`, `${where}: persist_layer_norm not supported by torch LayerNorm (give --no-persist-layer-norm).`);
    if (sp) fail(`${T}:50`, `${where}: sequence parallel not supported by torch LayerNorm.`);
    if (normalization === 'RMSNorm' && (env.torch[0] < 2 || (env.torch[0] === 2 && env.torch[1] < 4)))
      fail(`${T}:59`, `${where}: Torch RMSNorm requires PyTorch version >= 2.4.0.`);
  };
  if (!te) {
    // models/backends.py:118-127: RMSNorm → WrappedTorchNorm; else LNImpl = FusedLayerNorm with Apex, else WrappedTorchNorm.
    if (normalization === 'RMSNorm' || !env.apex) torchNorm('input_layernorm / pre_mlp_layernorm (local spec)');
    // dot_product_attention.py:57 and :80-81 (with attention.py:374-380 passing max(groups, t) groups).
    if (cp !== 1)
      fail(
        'megatron/core/transformer/dot_product_attention.py:57',
        'Context parallelism is only supported by TEDotProductAttention!',
      );
    if (a.has('--gradient-accumulation-fusion') || (!a.has('--no-gradient-accumulation-fusion') && !env.apex))
      fail(
        'megatron/core/tensor_parallel/layers.py:1070',
        'gradient_accumulation_fusion needs fused_weight_gradient_mlp_cuda (Apex): give --no-gradient-accumulation-fusion.',
      );
  }
  // Final norm (transformer_block.py:53-64): TENorm with TE, FusedLayerNorm with Apex, else WrappedTorchNorm.
  if (!env.transformerEngine) {
    if (env.apex) {
      if (normalization !== 'LayerNorm')
        fail(
          'megatron/core/fusions/fused_layer_norm.py:66',
          `final_layernorm: (${normalization}) is not supported in FusedLayerNorm.`,
        );
    } else torchNorm('final_layernorm');
  }

  // Module shapes: divide() in attention.py:350-366, dot_product_attention.py:78-81,
  // tensor_parallel/layers.py:965 (ColumnParallelLinear) and :1328 (RowParallelLinear).
  const d = a.has('--kv-channels') ? a.num('--kv-channels', 0) : Math.floor(h / heads);
  const ffn = a.num('--ffn-hidden-size', a.has('--swiglu') ? Math.floor((4 * h * 2) / 3 / 64) * 64 : 4 * h);
  const fc1 = a.has('--swiglu') ? 2 * ffn : ffn;
  if (groups < tp && !divides(heads, groups))
    fail(
      'megatron/core/transformer/attention.py:358',
      `num_attention_heads (${heads}) is not divisible by num_query_groups (${groups}).`,
    );
  const shapes: [string, number][] = [
    ['megatron/core/tensor_parallel/layers.py:965 (linear_qkv output)', (heads + 2 * groups) * d],
    ['megatron/core/tensor_parallel/layers.py:1328 (linear_proj input)', heads * d],
    ['megatron/core/tensor_parallel/layers.py:965 (linear_fc1 output)', fc1],
    ['megatron/core/tensor_parallel/layers.py:1328 (linear_fc2 input)', ffn],
    ['megatron/core/transformer/dot_product_attention.py:81 (query groups per partition)', Math.max(groups, tp)],
  ];
  for (const [source, n] of shapes) if (!divides(n, tp)) fail(source, `${n} is not divisible by ${tp}.`);

  // MoE (moe.ts: each rule with its line), and arguments.py:1338-1340 on the GPU.
  const moe = moeFromFlags((f) => a.flags.get(f), ffn);
  if (moe) {
    if (moe.groupedGemm && env.computeCapability < 8)
      fail(`${A}:1338-1340`, 'Unsupported compute capability for GroupedGEMM kernels.');
    const job = {
      tp,
      sp,
      pp,
      vpp: a.has('--num-virtual-stages-per-pipeline-rank') ? a.num('--num-virtual-stages-per-pipeline-rank', 1) : 1,
      gpus: env.worldSize,
      layers: a.num('--num-layers', 0),
      fullRecompute: granularity === 'full',
      halfPrecision: a.has('--bf16') || a.has('--fp16'),
      biases: !a.has('--disable-bias-linear'),
    };
    for (const r of moeRefusals(moe, job)) fail(r.source, r.message);
  }
  // Multi-latent attention (mla.ts: each rule with its line).
  try {
    const mla = mlaFromFlags((f) => a.flags.get(f));
    if (mla) for (const r of mlaRefusals(mla, { heads, groups })) fail(r.source, r.message);
  } catch (e) {
    fail('megatron/training/arguments.py:3379-3390', (e as Error).message);
  }
  // --recompute-modules (a list: the words after the flag), read with selective granularity
  // (transformer_config.py:1766-1818).
  const recomputeWords = listAfter(argv, '--recompute-modules');
  if (recomputeWords && granularity === 'selective') {
    try {
      const modules = parseRecomputeModules(recomputeWords.join(' '));
      const scaling = a.has('--fp8-format') ? fp8Recipe : undefined;
      for (const r of recomputeModuleRefusals(modules, {
        moe,
        mla: a.has('--multi-latent-attention'),
        fp8Recipe: scaling,
      }))
        fail(r.source, r.message);
    } catch (e) {
      fail(`${TC}:1778-1782`, (e as Error).message);
    }
  }
  // CUDA graphs: full_iteration without the NaN check (cuda-graph-rules.ts).
  if (a.str('--cuda-graph-impl', 'none') === 'full_iteration' && !a.has('--no-check-for-nan-in-loss-and-grad'))
    fail(fullIterationNanCheck.source, fullIterationNanCheck.message);
  // --fine-grained-activation-offloading (activation-offload-launch.ts: each rule with its line).
  out.push(
    ...offloadLaunchRefusals({
      flag: (f) => a.flags.get(f),
      list: (f) => listAfter(argv, f),
      env: env.env,
      ...(env.transformerEngineVersion ? { transformerEngineVersion: env.transformerEngineVersion } : {}),
    }),
  );
  return out;
}
