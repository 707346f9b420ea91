import { describe, expect, test } from 'vitest';
import { configFromPreset, presetNames, type LayerConfig } from '../../../src/parallel/config.ts';
import { assertValid, divisors, legalTpDegrees, maxHeadDim, validateConfig } from '../../../src/parallel/validate.ts';
import { maxRopePairs } from '../../../src/kernels/rope.ts';

/** gpt2-layer sizes (h 768, 12 heads, ffn 3072, s 32) with overrides. */
const gpt2 = (o: Partial<LayerConfig> = {}): LayerConfig => configFromPreset('gpt2-layer', o);

/** The single error of a config, asserting there is exactly one. */
function onlyError(c: LayerConfig) {
  const r = validateConfig(c);
  expect(r.ok).toBe(false);
  expect(r.errors).toHaveLength(1);
  return r.errors[0];
}

describe('validateConfig', () => {
  test.each(presetNames.flatMap((p) => [1, 2].map((t) => [p, t] as const)))(
    'accepts preset %s at t = %i with and without SP',
    (p, t) => {
      for (const sp of [false, true]) expect(validateConfig(configFromPreset(p, { tp: t, sp })).errors).toEqual([]);
    },
  );

  test('reports heads not divisible by t with the legal degrees for that head count', () => {
    const e = onlyError(gpt2({ tp: 8 }));
    expect(e.rule).toBe('heads-divisible-by-tp');
    expect(e.field).toBe('heads');
    expect(e.fields).toContain('tp');
    expect(e.message).toBe(
      'heads (12) must be divisible by the TP degree t = 8 (each rank computes heads/t whole heads): legal t for 12 heads are 1, 2, 3, 4, 6, 12.',
    );
    expect(e.legal).toEqual([1, 2, 3, 4, 6, 12]);
    expect(e.legalFor).toBe('tp');
  });

  test('reports h not divisible by heads and lists the head counts that divide h', () => {
    const e = onlyError(gpt2({ heads: 7, groups: 7, tp: 1 }));
    expect(e.rule).toBe('h-divisible-by-heads');
    expect(e.message).toContain('hidden size h (768) must be divisible by heads (7)');
    expect(e.message).toContain(
      'legal heads for h = 768 are 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 768.',
    );
  });

  test('reports an odd head width because RoPE rotates halves', () => {
    const e = onlyError(gpt2({ h: 36, heads: 12, groups: 12, tp: 1 }));
    expect(e.rule).toBe('head-dim-even');
    expect(e.message).toBe(
      "head width d = h/heads = 36/12 = 3 must be even (RoPE's rotate-half pairs element k with k + d/2): legal heads for h = 36 are 1, 2, 3, 6, 9, 18.",
    );
  });

  test('reports a head width above the RoPE kernel limit, which matches the kernel constant', () => {
    expect(maxHeadDim).toBe(2 * maxRopePairs);
    const e = onlyError(gpt2({ h: 1024, heads: 1, groups: 1, ffn: 64, tp: 1 }));
    expect(e.rule).toBe('head-dim-max');
    expect(e.message).toContain('head width d = h/heads = 1024/1 = 1024 must be at most 512');
    expect(e.legal).toEqual([2, 4, 8, 16, 32, 64, 128, 256, 512]);
    expect(e.legalFor).toBe('heads');
  });

  test('reports heads not divisible by query groups with the legal group counts', () => {
    const e = onlyError(gpt2({ groups: 5, tp: 1 }));
    expect(e.rule).toBe('heads-divisible-by-groups');
    expect(e.field).toBe('groups');
    expect(e.message).toBe(
      'heads (12) must be divisible by query groups (5) so each KV group serves heads/groups query heads: legal groups for 12 heads are 1, 2, 3, 4, 6, 12.',
    );
  });

  test('reports groups ≥ t not divisible by t (whole groups per rank)', () => {
    const e = onlyError(gpt2({ groups: 6, tp: 4 }));
    expect(e.rule).toBe('groups-vs-tp');
    expect(e.message).toBe(
      'query groups (6) must be divisible by the TP degree t = 4 when groups ≥ t (each rank holds groups/t whole KV groups): legal t for 6 groups and 12 heads are 1, 2, 3, 6, 12.',
    );
  });

  test('reports t > groups that is not a multiple of groups (a rank would straddle two groups)', () => {
    const e = onlyError(gpt2({ groups: 4, tp: 6 }));
    expect(e.rule).toBe('groups-vs-tp');
    expect(e.message).toBe(
      'the TP degree t = 6 must be a multiple of query groups (4) when t > groups (t/groups ranks share each KV group, as Megatron-Core requires): legal t for 4 groups and 12 heads are 1, 2, 4.',
    );
  });

  test('accepts groups < t dividing t and says as a note how the gathered QKV is split and what rank 0 takes', () => {
    const r = validateConfig(configFromPreset('llama-gqa', { tp: 8 }));
    expect(r.errors).toEqual([]);
    const n = r.notes.find((x) => x.rule === 'qkv-gather');
    expect(n?.field).toBe('groups');
    expect(n?.message).toContain(
      "2 query groups < t = 8: as Megatron-Core does (since core_v0.16), each rank computes an even 48-column slice of linear_qkv's 384 columns",
    );
    expect(n?.message).toContain(
      "takes group block ⌊r / 4⌋ with its own 1 of that group's query heads: rank 0 takes block 0, query head 0.",
    );
  });

  // Megatron-Core's ColumnParallelLinear splits linear_qkv's output W = (heads + 2·groups)·d evenly.
  test('reports W = (heads + 2·groups)·d not divisible by t when groups < t, with the legal degrees', () => {
    const e = onlyError(gpt2({ groups: 1, tp: 3 }));
    expect(e.rule).toBe('qkv-width-divisible-by-tp');
    expect(e.legal).toEqual([1, 2, 4]);
    expect(e.message).toBe(
      "with query groups (1) < t = 3, linear_qkv's output width (heads + 2·groups)·d = (12 + 2·1)·64 = 896 must be divisible by t (Megatron-Core splits it evenly over the ranks, then all-gathers it): legal t for 12 heads in 1 group with h = 768 are 1, 2, 4.",
    );
    expect(legalTpDegrees(gpt2({ groups: 1 }), false)).toEqual([1, 2, 4]);
  });

  test('reports FFN not divisible by t with the legal degrees for that FFN size', () => {
    const e = onlyError(gpt2({ ffn: 102, tp: 4 }));
    expect(e.rule).toBe('ffn-divisible-by-tp');
    expect(e.field).toBe('ffn');
    expect(e.message).toBe(
      'FFN hidden size (102) must be divisible by the TP degree t = 4 (gate and up are split by columns, down by rows): legal t for ffn = 102 are 1, 2, 3, 6.',
    );
  });

  test('reports s not divisible by t only under sequence parallel', () => {
    expect(validateConfig(gpt2({ s: 30, tp: 4 })).ok).toBe(true);
    const e = onlyError(gpt2({ s: 30, tp: 4, sp: true }));
    expect(e.rule).toBe('seq-divisible-by-tp');
    expect(e.field).toBe('s');
    expect(e.fields).toEqual(['s', 'tp', 'sp']);
    expect(e.message).toBe(
      'with sequence parallel the sequence length s (30) must be divisible by the TP degree t = 4 (each rank keeps s/t tokens): legal t for s = 30 are 1, 2, 3, 5, 6, 10, 15, or turn sequence parallel off.',
    );
  });

  test('pads the vocabulary to a multiple of t and reports the padding as a note, not an error', () => {
    const r = validateConfig(configFromPreset('classroom', { vocab: 30, tp: 4 }));
    expect(r.errors).toEqual([]);
    expect(r.notes.map((n) => n.message)).toContain(
      'vocabulary 30 is padded to 32 (the next multiple of t = 4) with 2 unused rows; each rank holds 8 rows.',
    );
    expect(validateConfig(configFromPreset('classroom', { tp: 4 })).notes.some((n) => n.rule === 'vocab-padding')).toBe(
      false,
    );
  });

  test('notes that sequence parallel does nothing at t = 1', () => {
    const r = validateConfig(gpt2({ sp: true }));
    expect(r.ok).toBe(true);
    expect(r.notes.find((n) => n.rule === 'sp-without-tp')?.message).toContain(
      'sequence parallel changes nothing at t = 1',
    );
  });

  test.each([
    ['s', 0, 'sequence length s (0) must be a positive integer (≥ 1).'],
    ['b', 1.5, 'micro-batch size b (1.5) must be a positive integer (≥ 1).'],
    ['h', -16, 'hidden size h (-16) must be a positive integer (≥ 1).'],
    ['heads', 0, 'attention heads (0) must be a positive integer (≥ 1).'],
    ['groups', Number.NaN, 'query groups (NaN) must be a positive integer (≥ 1).'],
    ['ffn', 0, 'FFN hidden size (0) must be a positive integer (≥ 1).'],
    ['vocab', -1, 'vocabulary size (-1) must be an integer ≥ 0 (0 = no embedding and no loss).'],
    ['seed', 2 ** 32, 'seed (4294967296) must be an integer in [0, 2^32).'],
    ['eps', 0, 'RMSNorm ε (0) must be a finite number > 0.'],
    ['ropeBase', Number.POSITIVE_INFINITY, 'RoPE base θ (Infinity) must be a finite number > 0.'],
  ] as const)('rejects %s = %s with the message "%s"', (field, value, message) => {
    const r = validateConfig(gpt2({ [field]: value }));
    const e = r.errors.find((x) => x.field === field);
    expect(e?.message).toBe(message);
    expect(r.errors).toHaveLength(1);
  });

  test('rejects a TP degree outside 1..16 and lists the legal ones', () => {
    for (const tp of [0, 17, 2.5]) {
      const e = onlyError(gpt2({ tp }));
      expect(e.rule).toBe('tp-range');
      expect(e.message).toBe(
        `the TP degree t (${tp}) must be an integer from 1 to 16: legal t for this model are 1, 2, 3, 4, 6, 12.`,
      );
    }
  });

  test('reports every broken rule at once, each next to its own control', () => {
    const r = validateConfig(gpt2({ tp: 8, ffn: 100, s: 30, sp: true }));
    expect(r.errors.map((e) => [e.rule, e.field])).toEqual([
      ['heads-divisible-by-tp', 'heads'],
      ['ffn-divisible-by-tp', 'ffn'],
      ['seq-divisible-by-tp', 's'],
    ]);
  });
});

describe('legalTpDegrees', () => {
  test('is the intersection of the per-rule degrees', () => {
    expect(legalTpDegrees({ s: 32, b: 1, h: 768, heads: 12, groups: 12, ffn: 3072, vocab: 0 }, false)).toEqual([
      1, 2, 3, 4, 6, 12,
    ]);
    expect(legalTpDegrees({ s: 30, b: 1, h: 768, heads: 12, groups: 12, ffn: 3072, vocab: 0 }, true)).toEqual([
      1, 2, 3, 6,
    ]);
    expect(legalTpDegrees({ s: 64, b: 1, h: 256, heads: 8, groups: 2, ffn: 704, vocab: 512 }, true)).toEqual([
      1, 2, 4, 8,
    ]);
  });

  test('agrees with validateConfig for every t up to 16', () => {
    const sizes = { s: 24, b: 1, h: 96, heads: 24, groups: 4, ffn: 96, vocab: 7 };
    for (const sp of [false, true]) {
      const legal = legalTpDegrees(sizes, sp);
      for (let t = 1; t <= 16; t++) expect(validateConfig(gpt2({ ...sizes, tp: t, sp })).ok).toBe(legal.includes(t));
    }
  });
});

describe('assertValid', () => {
  test('throws one error that lists every broken rule', () => {
    expect(() => assertValid(gpt2({ tp: 8, ffn: 100 }))).toThrow(
      'Invalid layer configuration (2 errors):\n- heads (12) must be divisible by the TP degree t = 8',
    );
    expect(() => assertValid(gpt2({ tp: 8, ffn: 100 }))).toThrow(
      '- FFN hidden size (100) must be divisible by the TP degree t = 8',
    );
  });

  test('passes a valid configuration with notes', () => {
    expect(() => assertValid(configFromPreset('llama-gqa', { tp: 4 }))).not.toThrow();
  });
});

test('divisors lists the divisors in increasing order', () => {
  expect(divisors(12)).toEqual([1, 2, 3, 4, 6, 12]);
  expect(divisors(1)).toEqual([1]);
});
