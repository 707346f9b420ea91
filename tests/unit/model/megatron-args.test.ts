import { describe, expect, test } from 'vitest';
import { formatMegatronArgs, megatronArgs, megatronCaveats } from '../../../src/model/megatron-args.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';

/** Flag → value ('' for a switch) of an argv list. */
function flags(args: readonly string[]): Map<string, string> {
  const m = new Map<string, string>();
  args.forEach((x, i) => {
    if (x.startsWith('--')) m.set(x, args[i + 1]?.startsWith('--') || i + 1 === args.length ? '' : args[i + 1]);
  });
  return m;
}

describe('megatronArgs', () => {
  test('spells out the gpt2-layer at t = 4 with SP as Megatron-LM arguments, in order', () => {
    const args = megatronArgs(configFromPreset('gpt2-layer', { tp: 4, sp: true }));
    expect(args).toEqual([
      '--tensor-model-parallel-size',
      '4',
      '--sequence-parallel',
      '--num-layers',
      '1',
      '--hidden-size',
      '768',
      '--ffn-hidden-size',
      '3072',
      '--num-attention-heads',
      '12',
      '--seq-length',
      '32',
      '--max-position-embeddings',
      '32',
      '--micro-batch-size',
      '1',
      '--swiglu',
      '--normalization',
      'RMSNorm',
      '--norm-epsilon',
      '0.00001',
      '--position-embedding-type',
      'rope',
      '--rotary-base',
      '10000',
      '--disable-bias-linear',
      '--attention-dropout',
      '0',
      '--hidden-dropout',
      '0',
      '--seed',
      '1234',
    ]);
  });

  test('adds grouped-query attention only when groups < heads', () => {
    const gqa = flags(megatronArgs(configFromPreset('llama-gqa', { tp: 2 })));
    expect(gqa.get('--group-query-attention')).toBe('');
    expect(gqa.get('--num-query-groups')).toBe('2');
    const mha = flags(megatronArgs(configFromPreset('gpt2-layer')));
    expect(mha.has('--group-query-attention')).toBe(false);
    expect(mha.has('--num-query-groups')).toBe(false);
  });

  test('leaves out --sequence-parallel without SP and at t = 1 (Megatron disables it there)', () => {
    expect(megatronArgs(configFromPreset('gpt2-layer', { tp: 2 }))).not.toContain('--sequence-parallel');
    expect(megatronArgs(configFromPreset('gpt2-layer', { tp: 1, sp: true }))).not.toContain('--sequence-parallel');
  });

  test('with a vocabulary of V asks NullTokenizer for V − 1 (it adds EOD) and pads to a multiple of 1·t, as the playground does', () => {
    const f = flags(megatronArgs(configFromPreset('llama-gqa', { tp: 4, vocab: 510 })));
    expect(f.get('--untie-embeddings-and-output-weights')).toBe('');
    expect(f.get('--tokenizer-type')).toBe('NullTokenizer');
    expect(f.get('--vocab-size')).toBe('509');
    expect(f.get('--make-vocab-size-divisible-by')).toBe('1');
    // Megatron: V = 509 + 1 = 510, padded to a multiple of 1 × 4 → 512 = ⌈510/4⌉·4.
  });

  test('has no vocabulary flags without a vocabulary', () => {
    const f = flags(megatronArgs(configFromPreset('gpt2-layer')));
    for (const x of [
      '--vocab-size',
      '--tokenizer-type',
      '--make-vocab-size-divisible-by',
      '--untie-embeddings-and-output-weights',
    ])
      expect(f.has(x)).toBe(false);
  });

  test('carries the RoPE base, ε, micro-batch and seed of the config', () => {
    const f = flags(megatronArgs(configFromPreset('classroom', { ropeBase: 500000, eps: 1e-6, b: 3, seed: 7 })));
    expect([f.get('--rotary-base'), f.get('--norm-epsilon'), f.get('--micro-batch-size'), f.get('--seed')]).toEqual([
      '500000',
      '0.000001',
      '3',
      '7',
    ]);
  });
});

describe('megatronCaveats', () => {
  test('says Megatron-Core rejects fewer query groups than the TP degree', () => {
    expect(megatronCaveats(configFromPreset('llama-gqa', { tp: 8 }))[0]).toBe(
      'Megatron-Core rejects num_query_groups (2) < tensor_model_parallel_size (8): its TransformerConfig requires num_query_groups to be a multiple of the TP size; the playground replicates each KV group instead.',
    );
    expect(megatronCaveats(configFromPreset('llama-gqa', { tp: 2 })).some((x) => x.includes('num_query_groups'))).toBe(
      false,
    );
  });

  test('mentions the missing vocabulary, SP at t = 1, a non-integer RoPE base and the final norm', () => {
    const all = megatronCaveats(configFromPreset('gpt2-layer', { sp: true, ropeBase: 1e4 + 0.5 })).join(' ');
    expect(all).toContain('Megatron always builds an embedding and a loss');
    expect(all).toContain('Megatron disables --sequence-parallel when tensor_model_parallel_size is 1');
    expect(all).toContain('Megatron parses --rotary-base as an integer; 10000.5 is not one.');
    expect(megatronCaveats(configFromPreset('classroom')).join(' ')).toContain('final norm');
  });
});

test('formatMegatronArgs puts one flag and its value per line with shell continuations', () => {
  expect(formatMegatronArgs(['--tensor-model-parallel-size', '2', '--sequence-parallel', '--num-layers', '1'])).toBe(
    '  --tensor-model-parallel-size 2 \\\n  --sequence-parallel \\\n  --num-layers 1',
  );
});
