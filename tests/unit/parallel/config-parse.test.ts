import { describe, expect, test } from 'vitest';
import { configFromSettings, parseDegrees, parseSwitch, parseWhole } from '../../../src/parallel/config-parse.ts';

describe('settings from flags and URL hashes', () => {
  test('a preset with overrides at a degree', () => {
    const c = configFromSettings({ preset: 'gpt2-layer', s: '64', sp: '1' }, 4);
    expect(c).toMatchObject({ h: 768, heads: 12, s: 64, tp: 4, sp: true });
  });

  test('bad numbers name the setting and say what is expected', () => {
    expect(() => parseWhole('--h', 'abc', 1)).toThrow('--h must be a whole number ≥ 1, got "abc".');
    expect(() => parseWhole('--h', '1.5', 1)).toThrow(/whole number/);
    expect(() => configFromSettings({ heads: '0' })).toThrow('--heads must be a whole number ≥ 1, got "0".');
  });

  test('degree lists and switches', () => {
    expect(parseDegrees('1, 2,4,8')).toEqual([1, 2, 4, 8]);
    expect(() => parseDegrees(',')).toThrow(/--tp needs one or more degrees/);
    expect(parseSwitch('sp', 'off')).toBe(false);
    expect(() => parseSwitch('sp', 'maybe')).toThrow('sp must be on or off (1/0, true/false), got "maybe".');
  });

  test('an unknown preset lists the presets', () => {
    expect(() => configFromSettings({ preset: 'gpt3' })).toThrow(
      'unknown preset "gpt3"; presets are classroom, gpt2-layer, llama-gqa.',
    );
  });
});
