import { describe, expect, test } from 'vitest';
import { cudaGraphFlags, cudaGraphRecomputeRefusals } from '../../../src/megatron/cuda-graph-rules.ts';
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
