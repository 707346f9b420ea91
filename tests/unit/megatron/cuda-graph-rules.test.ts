import { describe, expect, test } from 'vitest';
import { cudaGraphRecomputeRefusals } from '../../../src/megatron/cuda-graph-rules.ts';

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
