import { describe, expect, test } from 'vitest';
import {
  megatronArgs,
  megatronLaunch,
  transformerImpl,
  type MegatronRun,
} from '../../../src/megatron/megatron-args.ts';
import { checkMegatronLaunch, ngcEnvironment, type MegatronEnvironment } from '../../../src/megatron/megatron-check.ts';
import { configFromPreset, presetNames, type LayerConfig } from '../../../src/parallel/config.ts';
import { validateConfig } from '../../../src/parallel/validate.ts';

/** Every legal configuration the page can export: each preset at t = 1, 2, 4, 8 with and without SP. */
const configs: LayerConfig[] = presetNames
  .flatMap((p) => [1, 2, 4, 8].flatMap((tp) => [false, true].map((sp) => configFromPreset(p, { tp, sp }))))
  .filter((c) => validateConfig(c).ok);
const label = (c: LayerConfig): string => `${c.h}h ${c.heads}/${c.groups} heads vocab ${c.vocab} t ${c.tp} sp ${c.sp}`;
const envFor = (c: LayerConfig, over: Partial<MegatronEnvironment> = {}): MegatronEnvironment => ({
  ...ngcEnvironment(c.tp, megatronLaunch(c).env),
  ...over,
});
const sources = (argv: readonly string[], env: MegatronEnvironment): string[] =>
  checkMegatronLaunch(argv, env).map((f) => f.source);

describe("the emitted command passes the pinned release's start-up checks (TypeScript port)", () => {
  test('covers every preset at t = 1, 2, 4, 8 with and without SP that the playground accepts', () => {
    // 3 presets × 4 degrees × 2 = 24; t = 8 is illegal for the classroom's 4 heads and GPT-2's 12 (both SP settings).
    expect(configs.length).toBe(20);
  });

  test.each(configs.map((c) => [label(c), c] as const))(
    'in an NGC container (Transformer Engine + Apex, H100): %s',
    (_, c) => {
      expect(checkMegatronLaunch(megatronLaunch(c).args, envFor(c))).toEqual([]);
    },
  );

  test.each(configs.filter((c) => transformerImpl(c) === 'local').map((c) => [label(c), c] as const))(
    'without SP, also with neither Transformer Engine nor Apex (torch RMSNorm everywhere): %s',
    (_, c) => {
      expect(checkMegatronLaunch(megatronLaunch(c).args, envFor(c, { transformerEngine: false, apex: false }))).toEqual(
        [],
      );
    },
  );

  test('the seeds-like full job (10 layers, fp16, recompute, DP 2) passes at 8 V100s without Transformer Engine or Apex', () => {
    const c = configFromPreset('llama-gqa', { tp: 4 });
    const run: MegatronRun = { layers: 10, globalBatch: 16, dtype: 'fp16', recompute: true, trainIters: 10 };
    const v100 = ngcEnvironment(8, { CUDA_DEVICE_MAX_CONNECTIONS: '1' }, 7);
    expect(checkMegatronLaunch(megatronArgs(c, run), { ...v100, transformerEngine: false, apex: false })).toEqual([]);
    // Transformer Engine installed on sm_70: its CUDA 13 builds start at sm_75 (the rule jobBundle refuses by).
    expect(checkMegatronLaunch(megatronArgs(c, run), v100).map((f) => f.source)).toEqual([
      'TransformerEngine CMakeLists.txt:25-31',
    ]);
    // Turing (sm_75) is the floor: the same job with Transformer Engine passes there.
    expect(checkMegatronLaunch(megatronArgs(c, run), { ...v100, computeCapabilityMinor: 5 })).toEqual([]);
  });
});

describe('the port catches what stopped the earlier command', () => {
  const c = configFromPreset('llama-gqa', { tp: 2 });
  const args = megatronLaunch(c).args;
  const without = (flag: string): string[] => args.filter((x) => x !== flag);

  test("without --no-persist-layer-norm the local spec's torch RMSNorm asserts (torch_norm.py:48), twice under neither TE nor Apex", () => {
    expect(sources(without('--no-persist-layer-norm'), envFor(c))).toEqual([
      'megatron/core/transformer/torch_norm.py:48',
    ]);
    expect(sources(without('--no-persist-layer-norm'), envFor(c, { transformerEngine: false, apex: false }))).toEqual([
      'megatron/core/transformer/torch_norm.py:48',
      'megatron/core/transformer/torch_norm.py:48',
    ]);
  });

  test('SP under the local spec asserts in torch RMSNorm (torch_norm.py:50)', () => {
    const sp = configFromPreset('llama-gqa', { tp: 2, sp: true });
    const local = megatronLaunch(sp).args.map((x) => (x === 'transformer_engine' ? 'local' : x));
    expect(sources(local, envFor(sp))).toEqual(['megatron/core/transformer/torch_norm.py:50']);
  });

  test('Apex without Transformer Engine: the final norm is FusedLayerNorm, which rejects RMSNorm', () => {
    expect(sources(args, envFor(c, { transformerEngine: false }))).toEqual([
      'megatron/core/fusions/fused_layer_norm.py:66',
    ]);
  });

  test('the Transformer Engine spec needs Transformer Engine; old PyTorch has no RMSNorm', () => {
    const sp = configFromPreset('llama-gqa', { tp: 2, sp: true });
    expect(sources(megatronLaunch(sp).args, envFor(sp, { transformerEngine: false, apex: false }))).toContain(
      'megatron/core/extensions/transformer_engine_spec_provider.py',
    );
    // PyTorch 2.3: the local spec's two layer norms are torch RMSNorm (one class, one check here), and
    // without Transformer Engine the final norm is too.
    expect(sources(args, envFor(c, { torch: [2, 3] }))).toEqual(['megatron/core/transformer/torch_norm.py:59']);
    expect(sources(args, envFor(c, { torch: [2, 3], transformerEngine: false, apex: false }))).toEqual([
      'megatron/core/transformer/torch_norm.py:59',
      'megatron/core/transformer/torch_norm.py:59',
    ]);
  });

  test('environment, batch and shapes: CUDA_DEVICE_MAX_CONNECTIONS, world size, DP batch, heads, groups', () => {
    expect(sources(args, envFor(c, { env: {} }))).toEqual(['megatron/training/arguments.py:1437']);
    // From Blackwell on the variable is no longer required.
    expect(sources(args, envFor(c, { env: {}, computeCapability: 10 }))).toEqual([]);
    expect(sources(args, envFor(c, { worldSize: 3 }))).toEqual(['megatron/training/arguments.py:430']);
    // 4 GPUs at t = 2: DP 2, so a global batch of one micro-batch does not divide.
    expect(sources(args, envFor(c, { worldSize: 4 }))).toEqual(['megatron/training/arguments.py:694']);
    const bad = (over: Record<string, string>): string[] =>
      sources(
        args.map((x, i) => over[args[i - 1] ?? ''] ?? x),
        envFor(c),
      );
    expect(bad({ '--num-attention-heads': '7' })).toEqual(
      expect.arrayContaining([
        'megatron/training/arguments.py:1292',
        'megatron/core/transformer/transformer_config.py:1323',
      ]),
    );
    expect(bad({ '--num-query-groups': '3', '--num-attention-heads': '6' })).toContain(
      'megatron/core/transformer/transformer_config.py:1338',
    );
    expect(bad({ '--max-position-embeddings': '8' })).toEqual(['megatron/training/arguments.py:1314']);
  });

  test('full recompute needs a method and a layer count; the profiler must end before training does', () => {
    expect(sources([...args, '--recompute-granularity', 'full'], envFor(c))).toEqual([
      'megatron/core/transformer/transformer_config.py:1731-1740',
      'megatron/core/transformer/transformer_config.py:1742',
    ]);
    const prof = ['--profile', '--use-pytorch-profiler', '--profile-step-start', '8', '--profile-step-end', '12'];
    expect(sources([...args, ...prof], envFor(c))).toEqual(['megatron/training/training.py:3680']);
  });
});

describe('each ported assertion trips on a launch that breaks it, and on nothing else there', () => {
  // llama-gqa at t = 2 (h 256, 8 heads, 2 query groups, ffn 704, s 64, local spec, RMSNorm): no failure.
  const c = configFromPreset('llama-gqa', { tp: 2 });
  const base = megatronLaunch(c).args;
  /** The base launch without `drop` (each flag with its value) and with `add` appended (the last value wins, as in argparse). */
  const launch = (add: readonly string[] = [], drop: readonly string[] = []): string[] => {
    const out: string[] = [];
    for (let i = 0; i < base.length; i++) {
      if (!drop.includes(base[i]!)) out.push(base[i]!);
      else if (base[i + 1] !== undefined && !base[i + 1]!.startsWith('--')) i++;
    }
    return [...out, ...add];
  };
  const A = 'megatron/training/arguments.py';
  const TC = 'megatron/core/transformer/transformer_config.py';
  const layers = 'megatron/core/tensor_parallel/layers.py';

  test('the base launch passes', () => {
    expect(sources(launch(), envFor(c))).toEqual([]);
  });

  test('arguments: required flags, batch sizes, learning rates, precision, selective recompute, data, tokenizer', () => {
    expect(sources(launch([], ['--num-layers']), envFor(c))).toEqual([`${A}:1274-1277`]);
    expect(sources(launch(['--micro-batch-size', '0']), envFor(c))).toEqual([`${A}:675-676`]);
    expect(sources(launch(['--global-batch-size', '0']), envFor(c))).toEqual([`${A}:687`]);
    expect(sources(launch(['--min-lr', '0.001']), envFor(c))).toEqual([`${A}:1320`]);
    expect(sources(launch(['--min-lr', '0.0001']), envFor(c))).toEqual([]);
    expect(sources(launch(['--fp16', '--bf16']), envFor(c))).toEqual([`${A}:1173`]);
    expect(sources(launch(['--bf16']), envFor(c))).toEqual([]);
    expect(sources(launch(['--recompute-activations', '--recompute-method', 'uniform']), envFor(c))).toEqual([
      `${A}:1386`,
    ]);
    expect(sources(launch(['--recompute-activations']), envFor(c))).toEqual([]);
    expect(sources(launch(['--data-path', 'corpus_text_document']), envFor(c))).toEqual([`${A}:1624`]);
    expect(sources(launch([], ['--vocab-size']), envFor(c))).toEqual([
      'megatron/core/tokenizers/text/libraries/null_tokenizer.py',
    ]);
  });

  test('context parallelism: the sequence splits into 2·cp pieces; the local spec has no CP attention', () => {
    const te = ['--transformer-impl', 'transformer_engine'];
    // cp = 3 on 6 GPUs (t = 2, DP 1): s = 64 is not a multiple of 6.
    expect(sources(launch([...te, '--context-parallel-size', '3']), envFor(c, { worldSize: 6 }))).toEqual([
      `${A}:1296`,
    ]);
    expect(sources(launch([...te, '--context-parallel-size', '2']), envFor(c, { worldSize: 4 }))).toEqual([]);
    expect(sources(launch(['--context-parallel-size', '2']), envFor(c, { worldSize: 4 }))).toEqual([
      'megatron/core/transformer/dot_product_attention.py:57',
    ]);
  });

  test('the profiler needs end > start', () => {
    const prof = ['--profile', '--use-pytorch-profiler', '--train-iters', '20'];
    expect(sources(launch([...prof, '--profile-step-start', '12', '--profile-step-end', '12']), envFor(c))).toEqual([
      'megatron/training/training.py:3684',
    ]);
    expect(sources(launch([...prof, '--profile-step-start', '11', '--profile-step-end', '12']), envFor(c))).toEqual([]);
  });

  test('RoPE fusion needs Transformer Engine; torch norms have no 1p; the local spec fuses weight gradients only with Apex', () => {
    // LayerNorm: the local spec's norms and the final norm are Apex's FusedLayerNorm, so only the fusion fails.
    const layerNorm = ['--normalization', 'LayerNorm'];
    expect(sources(launch(layerNorm, ['--no-rope-fusion']), envFor(c, { transformerEngine: false }))).toEqual([
      `${TC}:2165-2186`,
    ]);
    expect(sources(launch(layerNorm), envFor(c, { transformerEngine: false }))).toEqual([]);
    expect(sources(launch(['--apply-layernorm-1p']), envFor(c))).toEqual([
      'megatron/core/transformer/torch_norm.py:44',
    ]);
    expect(sources(launch(['--gradient-accumulation-fusion']), envFor(c))).toEqual([`${layers}:1070`]);
    expect(sources(launch([], ['--no-gradient-accumulation-fusion']), envFor(c, { apex: false }))).toEqual([
      `${layers}:1070`,
    ]);
    expect(sources(launch([], ['--no-gradient-accumulation-fusion']), envFor(c))).toEqual([]);
  });

  test('module shapes: each divide() of the attention and MLP projections by t', () => {
    const t4 = ['--tensor-model-parallel-size', '4'];
    // t = 4, one query group of 33 channels: Q is 8·33 = 264 (÷ 4), Q + K + V is (8 + 2)·33 = 330 (not).
    expect(
      sources(launch([...t4, '--num-query-groups', '1', '--kv-channels', '33']), envFor(c, { worldSize: 4 })),
    ).toEqual([`${layers}:965 (linear_qkv output)`]);
    // 6 heads of 33 at t = 4: the output projection's 198 inputs do not split either (nor do the heads).
    expect(
      sources(launch([...t4, '--num-attention-heads', '6', '--kv-channels', '33']), envFor(c, { worldSize: 4 })),
    ).toEqual(expect.arrayContaining([`${TC}:1323`, `${layers}:1328 (linear_proj input)`]));
    // SwiGLU's fc1 is 2·ffn wide, so an odd ffn splits there and not in fc2; without SwiGLU in neither.
    expect(sources(launch(['--ffn-hidden-size', '705']), envFor(c))).toEqual([`${layers}:1328 (linear_fc2 input)`]);
    expect(sources(launch(['--ffn-hidden-size', '705'], ['--swiglu']), envFor(c))).toEqual([
      `${layers}:965 (linear_fc1 output)`,
      `${layers}:1328 (linear_fc2 input)`,
    ]);
    // 3 query groups at t = 2 (6 heads of 32): neither divides the other, and max(3, 2) = 3 groups do not split.
    expect(
      sources(launch(['--num-attention-heads', '6', '--num-query-groups', '3', '--kv-channels', '32']), envFor(c)),
    ).toEqual([`${TC}:1338`, 'megatron/core/transformer/dot_product_attention.py:81 (query groups per partition)']);
    // Fewer groups than t: the heads must split into the groups (9 heads, 2 groups, t = 4).
    expect(
      sources(
        launch([...t4, '--num-attention-heads', '9', '--num-query-groups', '2', '--kv-channels', '32']),
        envFor(c, { worldSize: 4 }),
      ),
    ).toContain('megatron/core/transformer/attention.py:358');
  });
});

describe("FSDP on the launch line: the port of Megatron's asserts (fsdp.ts)", () => {
  const c = configFromPreset('llama-gqa', { tp: 2, sp: true });
  const run: MegatronRun = { layers: 4, globalBatch: 8, dtype: 'bf16', recompute: false, trainIters: 10 };
  const base = megatronArgs(c, run);
  const unset = ngcEnvironment(8, {}, 9);
  const A = 'megatron/training/arguments.py';
  const mfsdp = ['--use-megatron-fsdp', '--data-parallel-sharding-strategy', 'optim_grads_params'];

  test('Megatron-FSDP passes with CUDA_DEVICE_MAX_CONNECTIONS unset (t > 1 only warns then) and fsdp_dtensor', () => {
    expect(sources([...base, ...mfsdp, '--ckpt-format', 'fsdp_dtensor'], unset)).toEqual([]);
    // Without FSDP the same environment fails the t > 1 rule.
    expect(sources(base, unset)).toEqual([`${A}:1437`]);
  });

  test('Megatron-FSDP refuses CUDA_DEVICE_MAX_CONNECTIONS=1 and another checkpoint format', () => {
    expect(sources([...base, ...mfsdp], ngcEnvironment(8, { CUDA_DEVICE_MAX_CONNECTIONS: '1' }, 9))).toEqual([
      `${A}:1143-1144`,
      `${A}:1146-1147`,
    ]);
  });

  test('FSDP2 refuses p > 1 and tied embeddings, and a strategy Megatron does not list is named', () => {
    const untied = base.filter((x) => x !== '--untie-embeddings-and-output-weights');
    expect(
      sources([...untied, '--use-torch-fsdp2', '--pipeline-model-parallel-size', '2'], ngcEnvironment(16, {}, 9)),
    ).toEqual([`${A}:1000-1001`, `${A}:1010-1011`]);
    const bad = checkMegatronLaunch(
      [...base, '--use-megatron-fsdp', '--data-parallel-sharding-strategy', 'zero3'],
      unset,
    );
    expect(bad.map((f) => f.message).join(' ')).toMatch(/use no_shard, optim, optim_grads, optim_grads_params/);
  });
});

describe('--recompute-modules on the launch line (transformer_config.py)', () => {
  const c = configFromPreset('llama-gqa', { tp: 2, sp: true });
  const run: MegatronRun = { layers: 4, globalBatch: 8, dtype: 'bf16', recompute: false, trainIters: 10 };
  const env = ngcEnvironment(8, { CUDA_DEVICE_MAX_CONNECTIONS: '1' }, 9);
  const T = 'megatron/core/transformer/transformer_config.py';
  const selective = (...modules: string[]) => [
    ...megatronArgs(c, run),
    '--recompute-granularity',
    'selective',
    '--recompute-modules',
    ...modules,
  ];

  test('a list of known modules passes; moe_act without grouped GEMM and an unknown name fail with their lines', () => {
    expect(sources(selective('core_attn', 'mlp', 'layernorm'), env)).toEqual([]);
    expect(sources(selective('core_attn', 'moe_act'), env)).toEqual([`${T}:1784-1787`]);
    expect(sources(selective('attention'), env)).toEqual([`${T}:1778-1782`]);
  });

  test('fp4 with fp8, mxfp8 below Blackwell and --fp8-param-gather without a sharded optimizer fail with their lines', () => {
    const base = selective('core_attn');
    expect(sources([...base, '--fp4-format', 'e2m1', '--fp8-format', 'hybrid'], ngcEnvironment(8, {}, 10))).toEqual([
      'megatron/training/arguments.py:1065-1066',
    ]);
    expect(sources([...base, '--fp8-format', 'e4m3', '--fp8-recipe', 'mxfp8'], env)).toEqual([
      'transformer_engine/pytorch/quantization.py',
    ]);
    expect(sources([...base, '--fp8-format', 'e4m3', '--fp8-recipe', 'mxfp8'], ngcEnvironment(8, {}, 10))).toEqual([]);
    expect(sources([...base, '--fp8-format', 'hybrid', '--fp8-param-gather'], env)).toEqual([
      'megatron/training/arguments.py:1060-1062',
    ]);
  });

  test('--fp4-param-gather needs --fp4-format; mxfp8 parameters under the distributed optimizer need the gradient buffer for their gather', () => {
    const base = [...selective('core_attn'), '--use-distributed-optimizer'];
    const b200 = ngcEnvironment(8, {}, 10);
    expect(sources([...base, '--fp4-param-gather'], b200)).toEqual(['megatron/training/arguments.py:1069-1070']);
    expect(sources([...base, '--fp4-format', 'e2m1', '--fp4-param-gather'], b200)).toEqual([]);
    const mx = [...base, '--fp8-format', 'e4m3', '--fp8-recipe', 'mxfp8', '--fp8-param-gather'];
    expect(sources(mx, b200)).toEqual(['megatron/core/distributed/param_and_grad_buffer.py:1284']);
    expect(sources([...mx, '--reuse-grad-buf-for-mxfp8-param-ag'], b200)).toEqual([]);
  });

  test('an --fp8-recipe argparse does not list is refused with the legal values; custom passes', () => {
    const base = selective('core_attn');
    const out = checkMegatronLaunch([...base, '--fp8-format', 'hybrid', '--fp8-recipe', 'mxfp4'], env);
    expect(out).toEqual([
      {
        source: `${T}:573-575`,
        message:
          "argument --fp8-recipe: invalid choice: 'mxfp4' (choose from 'tensorwise', 'delayed', 'mxfp8', 'blockwise', 'custom').",
      },
    ]);
    expect(sources([...base, '--fp8-format', 'hybrid', '--fp8-recipe', 'custom'], env)).toEqual([]);
  });

  test('layernorm under fp8 fails with delayed scaling, the default recipe (:1821-1827), and passes with tensorwise', () => {
    expect(sources([...selective('layernorm'), '--fp8-format', 'hybrid'], env)).toEqual([`${T}:1821-1827`]);
    expect(sources([...selective('layernorm'), '--fp8-format', 'hybrid', '--fp8-recipe', 'tensorwise'], env)).toEqual(
      [],
    );
  });
});

describe('--multi-latent-attention on the launch line (mla.ts)', () => {
  const run: MegatronRun = { layers: 4, globalBatch: 8, dtype: 'bf16', recompute: false, trainIters: 10 };
  const env = ngcEnvironment(8, { CUDA_DEVICE_MAX_CONNECTIONS: '1' }, 9);
  const mla = ['--multi-latent-attention', '--q-lora-rank', '64', '--kv-lora-rank', '32', '--qk-layernorm'];

  test('refuses it with group-query attention (arguments.py:1892-1893), passes it without', () => {
    const gqa = configFromPreset('llama-gqa', { tp: 2, sp: true });
    expect(sources([...megatronArgs(gqa, run), ...mla], env)).toEqual(['megatron/training/arguments.py:1892-1893']);
    const mha = configs.find((c) => c.groups === c.heads && c.tp === 2)!;
    expect(sources([...megatronArgs(mha, run), ...mla], env)).toEqual([]);
    expect(
      sources(
        [
          ...megatronArgs(mha, run),
          ...mla,
          '--recompute-granularity',
          'selective',
          '--recompute-modules',
          'mla_up_proj',
        ],
        env,
      ),
    ).toEqual([]);
  });
});
