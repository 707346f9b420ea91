import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import {
  formatMegatronCommand,
  megatronArgs,
  megatronCaveats,
  megatronLaunch,
  megatronRelease,
} from '../../../src/megatron/megatron-args.ts';
import { configFromPreset, presetNames, type LayerConfig } from '../../../src/parallel/config.ts';
import { paddedVocab } from '../../../src/parallel/ownership.ts';

/** Every flag of the pinned release (scripts/repo/megatron-flags.py over its arguments.py and config dataclasses). */
const fixture = JSON.parse(readFileSync(new URL('../../fixtures/megatron-flags.json', import.meta.url), 'utf8')) as {
  tag: string;
  commit: string;
  flags: string[];
};
const known = new Set(fixture.flags);

/** Flag → value ('' for a switch) of an argv list. */
function flags(args: readonly string[]): Map<string, string> {
  const m = new Map<string, string>();
  args.forEach((x, i) => {
    if (x.startsWith('--')) m.set(x, args[i + 1]?.startsWith('--') || i + 1 === args.length ? '' : args[i + 1]);
  });
  return m;
}

/** Every configuration shape the page can export: each preset at t = 1, 2, 4, 8 with and without SP. */
const configs: LayerConfig[] = presetNames.flatMap((p) =>
  [1, 2, 4, 8].flatMap((tp) => [false, true].map((sp) => configFromPreset(p, { tp, sp }))),
);

describe('megatronArgs against the pinned Megatron-LM release', () => {
  test('the fixture is the release the command names, with a plausible flag list', () => {
    expect([fixture.tag, fixture.commit]).toEqual([megatronRelease.tag, megatronRelease.commit]);
    // Flags every release of the last years has, from both ways arguments.py declares them.
    for (const f of ['--hidden-size', '--num-query-groups', '--sequence-parallel', '--swiglu', '--train-iters'])
      expect(known.has(f)).toBe(true);
    expect(known.has('--no-such-flag')).toBe(false);
  });

  test.each(
    configs.map((c) => [`${c.s}x${c.h} heads ${c.heads}/${c.groups} vocab ${c.vocab} t ${c.tp} sp ${c.sp}`, c]),
  )('every emitted flag exists in the release (%s)', (_, c) => {
    const unknown = megatronArgs(c as LayerConfig).filter((x) => x.startsWith('--') && !known.has(x));
    expect(unknown).toEqual([]);
  });

  test('the command starts: environment, torchrun on t processes, pretrain_gpt.py, data, iterations, lr', () => {
    const l = megatronLaunch(configFromPreset('llama-gqa', { tp: 4, sp: true }));
    expect(l.env).toEqual({ CUDA_DEVICE_MAX_CONNECTIONS: '1' });
    expect([...l.launcher, l.script]).toEqual(['torchrun', '--nproc-per-node', '4', 'pretrain_gpt.py']);
    const f = flags(l.args);
    expect(f.get('--tensor-model-parallel-size')).toBe('4');
    expect(f.get('--sequence-parallel')).toBe('');
    // Under SP the Transformer Engine spec (the local spec's torch RMSNorm rejects SP, torch_norm.py:50).
    expect(f.get('--transformer-impl')).toBe('transformer_engine');
    expect(f.get('--no-persist-layer-norm')).toBe('');
    expect(f.get('--mock-data')).toBe('');
    expect(Number(f.get('--train-iters'))).toBeGreaterThan(0);
    expect(Number(f.get('--lr'))).toBeGreaterThan(0);
    // Data-parallel size 1 (t processes, TP t): the global batch is one micro-batch.
    expect(f.get('--global-batch-size')).toBe(f.get('--micro-batch-size'));
    const text = formatMegatronCommand(l);
    expect(text.split(' \\\n  ')[0]).toBe('CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun --nproc-per-node 4 pretrain_gpt.py');
    expect(text).toContain(' \\\n  --tensor-model-parallel-size 4 \\\n  --sequence-parallel \\\n');
  });

  test.each([
    [510, 4],
    [512, 8],
    [32, 2],
    [1000, 3],
  ])(
    'NullTokenizer with --vocab-size %i and divisible-by 1 pads to the playground vocabulary at t = %i',
    (vocab, tp) => {
      const f = flags(megatronArgs(configFromPreset('llama-gqa', { tp, vocab })));
      expect(f.get('--tokenizer-type')).toBe('NullTokenizer');
      // core_v0.19.0 NullTokenizer: vocab_size = --vocab-size (EOD is V − 1, no extra id);
      // vocab_utils: V_p = ⌈V / (divisible-by · t)⌉ · divisible-by · t.
      const V = Number(f.get('--vocab-size'));
      const m = Number(f.get('--make-vocab-size-divisible-by')) * tp;
      expect(V).toBe(vocab);
      expect(Math.ceil(V / m) * m).toBe(paddedVocab({ vocab, tp }));
    },
  );

  test('adds grouped-query attention only when groups < heads', () => {
    const gqa = flags(megatronArgs(configFromPreset('llama-gqa', { tp: 2 })));
    expect(gqa.get('--group-query-attention')).toBe('');
    expect(gqa.get('--num-query-groups')).toBe('2');
    const mha = flags(megatronArgs(configFromPreset('gpt2-layer')));
    expect(mha.has('--group-query-attention')).toBe(false);
    expect(mha.has('--num-query-groups')).toBe(false);
  });

  test('the local spec without SP, with --no-persist-layer-norm (torch_norm.py:48)', () => {
    const f = flags(megatronArgs(configFromPreset('llama-gqa', { tp: 2 })));
    expect(f.get('--transformer-impl')).toBe('local');
    expect(f.get('--no-persist-layer-norm')).toBe('');
  });

  test('leaves out --sequence-parallel without SP and at t = 1 (Megatron disables it there)', () => {
    expect(megatronArgs(configFromPreset('gpt2-layer', { tp: 2 }))).not.toContain('--sequence-parallel');
    expect(megatronArgs(configFromPreset('gpt2-layer', { tp: 1, sp: true }))).not.toContain('--sequence-parallel');
  });

  test('carries the sizes, RoPE base, ε, micro-batch and seed of the config', () => {
    const f = flags(megatronArgs(configFromPreset('classroom', { ropeBase: 500000, eps: 1e-6, b: 3, seed: 7 })));
    expect(
      ['--hidden-size', '--ffn-hidden-size', '--num-attention-heads', '--seq-length'].map((x) => f.get(x)),
    ).toEqual(['16', '32', '4', '8']);
    expect([f.get('--rotary-base'), f.get('--norm-epsilon'), f.get('--micro-batch-size'), f.get('--seed')]).toEqual([
      '500000',
      '0.000001',
      '3',
      '7',
    ]);
  });
});

describe('megatronCaveats', () => {
  test('lists the final norm, embeddings, biases, initialisation, training and precision for every config', () => {
    const all = megatronCaveats(configFromPreset('classroom')).join(' ');
    for (const x of ['Final norm', 'Embeddings', 'Biases', 'Weights and data', 'Training', 'Precision', 'Local spec'])
      expect(all).toContain(x);
    const sp = megatronCaveats(configFromPreset('llama-gqa', { tp: 2, sp: true })).join(' ');
    expect(sp).toContain('Transformer Engine spec');
    expect(sp).not.toContain('Local spec');
  });

  test('names the per-group QKV shard layout where groups ≥ t and there is GQA', () => {
    const layout = 'QKV shard layout';
    expect(megatronCaveats(configFromPreset('llama-gqa', { tp: 2 })).join(' ')).toContain(layout);
    expect(megatronCaveats(configFromPreset('llama-gqa', { tp: 4 })).join(' ')).not.toContain(layout);
    expect(megatronCaveats(configFromPreset('gpt2-layer', { tp: 2 })).join(' ')).not.toContain(layout);
  });

  test('mentions the missing vocabulary, SP at t = 1 and a non-integer RoPE base where they apply', () => {
    const all = megatronCaveats(configFromPreset('gpt2-layer', { sp: true, ropeBase: 1e4 + 0.5 })).join(' ');
    expect(all).toContain('Megatron always builds an embedding and a loss');
    expect(all).toContain('Megatron disables --sequence-parallel when tensor_model_parallel_size is 1');
    expect(all).toContain('Megatron parses --rotary-base as an integer; 10000.5 is not one.');
    expect(megatronCaveats(configFromPreset('llama-gqa', { tp: 2 })).join(' ')).not.toContain('vocabulary of 1');
  });
});
