import { describe, expect, test } from 'vitest';
import {
  cudaGraphFlags,
  cudaGraphRecomputeRefusals,
  cudaGraphScopeRefusals,
  parseCudaGraphModules,
  type GraphScopeMoe,
} from '../../../src/megatron/cuda-graph-rules.ts';
import { parseProjectArgs } from '../../../scripts/project/project-args.ts';
import { cudaGraphRefusalsOf } from '../../../src/projection/step/chunk-times.ts';
import { smallMoeJob } from '../../moe-fixtures.ts';
import { megatronLaunch } from '../../../src/megatron/megatron-args.ts';
import { checkMegatronLaunch, ngcEnvironment } from '../../../src/megatron/megatron-check.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';

const lines = (why: string[]): string[] => why.map((m) => /:(\d+-\d+)\)/.exec(m)![1]!);

describe("Megatron's asserts on whole-layer CUDA graphs with recomputation (transformer_config.py, core_v0.19.0)", () => {
  test('full recomputation only under full_iteration', () => {
    const full = { granularity: 'full', modules: [], dropout: false } as const;
    expect(lines(cudaGraphRecomputeRefusals('local', full))).toEqual(['2522-2525']);
    expect(lines(cudaGraphRecomputeRefusals('transformer_engine', full))).toEqual(['2522-2525']);
    expect(cudaGraphRecomputeRefusals('full_iteration', full)).toEqual([]);
  });

  test('with dropout (GPT), no recomputed core_attn, mlp or moe inside the graph; without dropout all pass', () => {
    const sel = (modules: ('core_attn' | 'mlp' | 'moe' | 'layernorm')[], dropout: boolean) =>
      ({ granularity: 'selective', modules, dropout }) as const;
    expect(lines(cudaGraphRecomputeRefusals('local', sel(['core_attn'], true)))).toEqual(['2545-2552']);
    expect(lines(cudaGraphRecomputeRefusals('full_iteration', sel(['core_attn', 'mlp'], true)))).toEqual([
      '2545-2552',
      '2553-2566',
    ]);
    expect(lines(cudaGraphRecomputeRefusals('transformer_engine', sel(['moe'], true)))).toEqual(['2553-2566']);
    expect(cudaGraphRecomputeRefusals('local', sel(['layernorm'], true))).toEqual([]);
    expect(cudaGraphRecomputeRefusals('local', sel(['core_attn', 'mlp', 'moe'], false))).toEqual([]);
    expect(cudaGraphRecomputeRefusals('local', { granularity: undefined, modules: [], dropout: true })).toEqual([]);
  });
});

describe('full_iteration and the NaN check (arguments.py:1195-1197): the emitted flags and the ported validation agree', () => {
  const launch = megatronLaunch(configFromPreset('llama-gqa', { tp: 2 }));
  const check = (extra: readonly string[]) =>
    checkMegatronLaunch([...launch.args, ...extra], ngcEnvironment(2, launch.env));

  test('the flags emitted for each impl pass; full_iteration carries --no-check-for-nan-in-loss-and-grad', () => {
    expect(cudaGraphFlags('full_iteration')).toEqual([
      '--cuda-graph-impl',
      'full_iteration',
      '--no-check-for-nan-in-loss-and-grad',
    ]);
    expect(cudaGraphFlags('local')).toEqual(['--cuda-graph-impl', 'local']);
    for (const impl of ['local', 'transformer_engine', 'full_iteration'] as const)
      expect(check(cudaGraphFlags(impl))).toEqual([]);
  });

  test("a full_iteration command without the flag is refused in Megatron's words", () => {
    expect(check(['--cuda-graph-impl', 'full_iteration'])).toEqual([
      {
        source: 'megatron/training/arguments.py:1195-1197',
        message:
          '--no-check-for-nan-in-loss-and-grad should be set with --cuda-graph-impl=full_iteration for training.',
      },
    ]);
  });
});

describe('the per-layer scope --cuda-graph-modules (transformer_config.py:2461-2566, cuda_graph_config.py)', () => {
  const dense = { moe: undefined, recomputeModules: [] } as const;
  const moe = (m: Partial<GraphScopeMoe> = {}) => ({
    moe: { allLayersMoe: true, dropAndPad: false, preprocessSyncs: false, ...m },
    recomputeModules: [] as const,
  });

  test('parses as normalize_cuda_graph_modules: full alone is the whole layer; deprecated and unknown names refused', () => {
    expect(parseCudaGraphModules('full')).toEqual([]);
    expect(parseCudaGraphModules('attn mlp,attn')).toEqual(['attn', 'mlp']);
    expect(() => parseCudaGraphModules('full attn')).toThrow(
      /full scope cannot be used with other scopes \(.*:39-40\)/,
    );
    expect(() => parseCudaGraphModules('full_iteration')).toThrow(/write --cuda-graph-impl full_iteration/);
    expect(() => parseCudaGraphModules('router')).toThrow(/attn, mlp, moe, moe_router, moe_preprocess, mamba/);
  });

  test('each assert on the scope, with its line; the whole layer passes them all', () => {
    expect(lines(cudaGraphScopeRefusals('full_iteration', ['attn'], dense))).toEqual(['2461-2463']);
    expect(
      lines(cudaGraphScopeRefusals('transformer_engine', ['moe', 'moe_router'], moe({ dropAndPad: true }))),
    ).toEqual(['2484-2487']);
    // transformer_engine keeps moe_preprocess alone (refused); local adds moe_router beside it (:2472-2482).
    expect(lines(cudaGraphScopeRefusals('transformer_engine', ['moe_preprocess'], moe()))).toEqual(['2488-2491']);
    expect(cudaGraphScopeRefusals('local', ['moe_preprocess'], moe())).toEqual([]);
    expect(lines(cudaGraphScopeRefusals('local', ['moe_router'], dense))).toEqual(['2492-2496']);
    expect(lines(cudaGraphScopeRefusals('local', ['attn', 'mlp'], moe()))).toEqual(['2498-2504']);
    expect(cudaGraphScopeRefusals('local', ['attn', 'mlp'], moe({ allLayersMoe: false }))).toEqual([]);
    expect(lines(cudaGraphScopeRefusals('transformer_engine', ['moe'], moe()))).toEqual(['2505-2511']);
    expect(cudaGraphScopeRefusals('transformer_engine', ['moe'], moe({ dropAndPad: true }))).toEqual([]);
    expect(
      lines(
        cudaGraphScopeRefusals('transformer_engine', ['moe_router', 'moe_preprocess'], moe({ preprocessSyncs: true })),
      ),
    ).toEqual(['2512-2519']);
    const te = { ...moe(), recomputeModules: ['moe'] as const };
    expect(lines(cudaGraphScopeRefusals('transformer_engine', ['moe_router'], te))).toEqual(['2529-2536']);
    expect(cudaGraphScopeRefusals('local', ['moe_router'], te)).toEqual([]);
    expect(cudaGraphScopeRefusals('full_iteration', [], te)).toEqual([]);
  });

  test('with dropout, a recomputed module outside a partial scope is allowed (full_cudagraph false, :2541-2566)', () => {
    const job = (scope: ('attn' | 'mlp')[]) =>
      ({ granularity: 'selective', modules: ['core_attn', 'mlp'], dropout: true, scope }) as const;
    expect(lines(cudaGraphRecomputeRefusals('local', job([])))).toEqual(['2545-2552', '2553-2566']);
    expect(lines(cudaGraphRecomputeRefusals('local', job(['attn'])))).toEqual(['2545-2552']);
    expect(lines(cudaGraphRecomputeRefusals('transformer_engine', job(['mlp'])))).toEqual(['2553-2566']);
  });

  test('the CLI reads --cuda-graph-modules (or the old --cuda-graph-scope); the projection refuses as Megatron does, then a partial scope as not priced', () => {
    const k = (args: string[]) => parseProjectArgs(['--cuda-graph-impl', 'transformer_engine', ...args]).kernels;
    expect(k(['--cuda-graph-modules', 'attn mlp']).cudaGraphModules).toEqual(['attn', 'mlp']);
    expect(k(['--cuda-graph-scope', 'full']).cudaGraphModules).toBeUndefined();
    expect(() => k(['--cuda-graph-scope', 'attn', '--cuda-graph-modules', 'attn'])).toThrow(/arguments.py:615-618/);
    // Every layer MoE (the distributed optimizer it carries plays no part in the graph rules).
    const setup = smallMoeJob();
    // The projection's MoE is dropless: the moe scope is Megatron's refusal.
    expect(cudaGraphRefusalsOf(setup, k(['--cuda-graph-modules', 'attn moe']))).toEqual([
      'moe cuda graph is only supported with drop-padding MoE. (megatron/core/transformer/transformer_config.py:2505-2511)',
    ]);
    expect(cudaGraphRefusalsOf(setup, k(['--cuda-graph-modules', 'attn moe_router']))[0]).toMatch(
      /--cuda-graph-modules attn moe_router: a partial capture scope is not priced yet/,
    );
    expect(cudaGraphRefusalsOf(setup, k([]))).toEqual([]);
  });
});
