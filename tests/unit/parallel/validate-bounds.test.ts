import { describe, expect, test } from 'vitest';
import { configFromPreset, type LayerConfig } from '../../../src/parallel/config.ts';
import { divisors, maxHeads, maxSize, validateConfig } from '../../../src/parallel/validate.ts';

/** Divisors by trial of every d ≤ n: the definition, for small n. */
const byDefinition = (n: number): number[] => Array.from({ length: n }, (_, i) => i + 1).filter((d) => n % d === 0);

describe('validation is bounded for any input', () => {
  test('divisors by pairs up to √n agree with the definition for n = 1…400', () => {
    for (let n = 1; n <= 400; n++) expect(divisors(n)).toEqual(byDefinition(n));
  });

  test('divisors of 2^24 and of a large prime come out by pairs', () => {
    expect(divisors(2 ** 24)).toEqual(Array.from({ length: 25 }, (_, i) => 2 ** i));
    expect(divisors(16_777_213)).toEqual([1, 16_777_213]); // the largest prime below 2^24
  });

  test.each([
    ['h', 1_000_000_000_001],
    ['s', 1_000_000_000],
    ['ffn', Number.MAX_SAFE_INTEGER],
    ['vocab', maxSize + 1],
    ['b', maxSize + 1],
  ] as const)('%s = %i is refused as above the stated maximum, naming it', (field, v) => {
    const r = validateConfig(configFromPreset('classroom', { tp: 2, [field]: v }));
    const e = r.errors.find((x) => x.field === field);
    expect(e?.rule).toBe('size-max');
    expect(e?.message).toContain(`(${v}) is more than the playground's maximum of ${maxSize} (2^24`);
  });

  test('heads above the dispatch limit are refused with the reason', () => {
    const r = validateConfig(configFromPreset('classroom', { heads: maxHeads + 1, groups: 1 }));
    expect(r.errors.map((e) => e.rule)).toEqual(['size-max']);
    expect(r.errors[0].message).toContain(`more than the maximum of ${maxHeads}`);
  });

  test('the largest legal h with an illegal head count lists its legal heads, cut after 24', () => {
    // 720720·16 = 11,531,520 < 2^24 has hundreds of divisors; the message lists 24 and counts the rest.
    const c: LayerConfig = configFromPreset('classroom', { h: 11_531_520, heads: 7 * 11 * 13 * 17, groups: 1 });
    const e = validateConfig(c).errors.find((x) => x.rule === 'h-divisible-by-heads')!;
    expect(e.legal!.length).toBe(divisors(11_531_520).length);
    expect(e.message).toMatch(/legal heads for h = 11531520 are 1, 2, 3, .* … and \d+ more\.$/);
  });
});
