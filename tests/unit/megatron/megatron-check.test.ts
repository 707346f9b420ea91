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

  test('the seeds-like full job (10 layers, fp16, recompute, DP 2) passes at 8 GPUs', () => {
    const c = configFromPreset('llama-gqa', { tp: 4 });
    const run: MegatronRun = { layers: 10, globalBatch: 16, dtype: 'fp16', recompute: true, trainIters: 10 };
    expect(
      checkMegatronLaunch(megatronArgs(c, run), ngcEnvironment(8, { CUDA_DEVICE_MAX_CONNECTIONS: '1' }, 7)),
    ).toEqual([]);
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
    expect(sources(args, envFor(c, { env: {}, arch: 10 }))).toEqual([]);
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
