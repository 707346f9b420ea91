import { describe, expect, test } from 'vitest';
import { RecentMap } from '../../../src/core/recent-map.ts';

describe('RecentMap', () => {
  test('keeps the capacity most recently set keys and drops the oldest', () => {
    const m = new RecentMap<string, number>(2);
    m.set('a', 1).set('b', 2).set('c', 3);
    expect([...m.keys()]).toEqual(['b', 'c']);
    expect(m.get('a')).toBeUndefined();
    expect(m.size).toBe(2);
  });

  test('get makes a key the newest, so the other one is dropped next', () => {
    const m = new RecentMap<string, number>(2);
    m.set('a', 1).set('b', 2);
    expect(m.get('a')).toBe(1);
    m.set('c', 3);
    expect([...m.keys()]).toEqual(['a', 'c']);
    expect(m.has('b')).toBe(false);
  });

  test('setting a key again replaces its value without growing', () => {
    const m = new RecentMap<string, number>(2);
    m.set('a', 1).set('b', 2).set('a', 10);
    expect([...m.keys()]).toEqual(['b', 'a']);
    expect(m.get('a')).toBe(10);
    expect(m.size).toBe(2);
  });

  test('an undefined value is kept, not mistaken for a miss', () => {
    const m = new RecentMap<string, number | undefined>(1);
    m.set('a', undefined);
    expect(m.has('a')).toBe(true);
    expect(m.get('a')).toBeUndefined();
  });

  test.each([0, -1, 1.5, Number.NaN])('capacity %d is refused with the rule', (capacity) => {
    expect(() => new RecentMap(capacity)).toThrow(/capacity must be a positive integer/);
  });
});
