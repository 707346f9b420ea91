import { describe, expect, test } from 'vitest';
import {
  formatBytes,
  formatFlops,
  formatMs,
  formatSignedMs,
  gflopsPerSecond,
  msTickFormat,
} from '../../../src/core/format.ts';

describe('numbers in their units', () => {
  test('bytes are shown in binary units with at most three significant digits', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(98304)).toBe('96 KiB');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(3 * 2 ** 20)).toBe('3 MiB');
    expect(formatBytes(2 ** 30 * 1.25)).toBe('1.25 GiB');
  });

  test('times pick µs below a millisecond, ms below a second, then s', () => {
    expect(formatMs(0)).toBe('0 ms');
    expect(formatMs(0.0374)).toBe('37.4 µs');
    expect(formatMs(7.746)).toBe('7.75 ms');
    expect(formatMs(1234)).toBe('1.23 s');
    expect(formatMs(0.0000005)).toBe('0.5 ns');
  });

  test('the unit comes after rounding: a step just under a second reads 1 s, never 1000 ms', () => {
    expect(formatMs(999.6)).toBe('1 s');
    expect(formatMs(999.4)).toBe('999 ms');
    expect(formatMs(-999.6)).toBe('-1 s');
    expect(formatMs(0.9996)).toBe('1 ms');
    expect(formatMs(0.0009996)).toBe('1 µs');
    expect(formatSignedMs(999.7)).toBe('+1 s');
    expect(msTickFormat([0, 999.6])(999.6)).toBe('1 s');
  });

  test('a change of time keeps its sign, a minus sign for a decrease, and no unit when nothing changed', () => {
    expect(formatSignedMs(1.2)).toBe('+1.2 ms');
    expect(formatSignedMs(-0.0371)).toBe('−37.1 µs');
    expect(formatSignedMs(0)).toBe('0');
  });

  test('an axis writes every tick in the unit of its domain: 0 µs beside 50 µs, never 0 ms', () => {
    const us = msTickFormat([0, 0.25]);
    expect([0, 0.05, 0.25].map(us)).toEqual(['0 µs', '50 µs', '250 µs']);
    const ms = msTickFormat([0.4, 2.5]);
    expect([0.4, 1, 2.5].map(ms)).toEqual(['0.4 ms', '1 ms', '2.5 ms']);
    expect(msTickFormat([0, 1500])(500)).toBe('0.5 s');
  });

  test('zoomed deep into a long step, the ticks take the decimals their step needs and never repeat', () => {
    const ticks = [123.4501, 123.4502, 123.4503, 123.4504];
    const f = msTickFormat([123.45005, 123.45045], ticks);
    expect(ticks.map(f)).toEqual(['123.4501 ms', '123.4502 ms', '123.4503 ms', '123.4504 ms']);
    // Where three significant digits already tell the ticks apart, they stay.
    expect([0, 0.05, 0.1].map(msTickFormat([0, 0.1], [0, 0.05, 0.1]))).toEqual(['0 µs', '50 µs', '100 µs']);
  });

  test('FLOPs take an SI prefix and GFLOP/s is FLOPs per ns of the duration', () => {
    expect(formatFlops(37748736)).toBe('37.7 MFLOP');
    expect(formatFlops(999)).toBe('999 FLOP');
    // The prefix follows the rounded value: 999,600 FLOP is "1 MFLOP", never "1000 kFLOP".
    expect(formatFlops(999_600)).toBe('1 MFLOP');
    expect(formatFlops(999.6)).toBe('1 kFLOP');
    expect(gflopsPerSecond(5e6, 1)).toBe(5);
    expect(gflopsPerSecond(5e6, 0)).toBe(0);
  });
});
