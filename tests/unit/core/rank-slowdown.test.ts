import { describe, expect, test } from 'vitest';
import {
  formatRankSlowdown,
  maxSlowdownFactor,
  parseRankSlowdown,
  slowdownOf,
  slowdownRankIssue,
} from '../../../src/core/rank-slowdown.ts';

describe('#slow=r:f and #slowlink=r:f', () => {
  test('"2:3" is rank 2 at factor 3; "off" and the empty value are off; format reads back', () => {
    expect(parseRankSlowdown('slow', '2:3')).toEqual({ rank: 2, factor: 3 });
    expect(parseRankSlowdown('slow', 'off')).toBeNull();
    expect(parseRankSlowdown('slow', '')).toBeNull();
    expect(formatRankSlowdown({ rank: 2, factor: 3 })).toBe('2:3');
    expect(formatRankSlowdown(null)).toBe('off');
    expect(parseRankSlowdown('slowlink', formatRankSlowdown({ rank: 0, factor: 16 }))).toEqual({ rank: 0, factor: 16 });
  });

  test('a factor below 1, fractional or absurd, and a malformed value are refused with what to write', () => {
    expect(() => parseRankSlowdown('slow', '2:0.5')).toThrow(
      /slow: the factor "0.5" must be a whole number from 1 to 16 \(below 1 would make the rank faster.*write slow=r:f/,
    );
    expect(() => parseRankSlowdown('slow', '2:1.5')).toThrow(/the factor "1.5" must be a whole number from 1 to 16/);
    expect(() => parseRankSlowdown('slowlink', `1:${maxSlowdownFactor + 1}`)).toThrow(
      /slowlink: the factor "17" must be a whole number from 1 to 16/,
    );
    expect(() => parseRankSlowdown('slow', '1:1e9')).toThrow(/the factor "1e9"/);
    expect(() => parseRankSlowdown('slow', 'two:3')).toThrow(
      /slow "two:3" is not rank:factor; write slow=r:f .* or slow=off/,
    );
    expect(() => parseRankSlowdown('slow', '-1:3')).toThrow(/is not rank:factor/);
  });

  test('a rank the TP group does not have is named with the ranks there are', () => {
    expect(slowdownRankIssue('slow', { rank: 4, factor: 3 }, 4)).toBe(
      'slow=4:3 names rank 4, but t = 4 has ranks 0–3; pick one of them or set slow=off.',
    );
    expect(slowdownRankIssue('slow', { rank: 3, factor: 3 }, 4)).toBeNull();
    expect(slowdownRankIssue('slow', null, 1)).toBeNull();
  });

  test('the factor a rank runs at: f on the slowed rank, 1 elsewhere', () => {
    expect(slowdownOf({ rank: 2, factor: 3 }, 2)).toBe(3);
    expect(slowdownOf({ rank: 2, factor: 3 }, 1)).toBe(1);
    expect(slowdownOf(null, 0)).toBe(1);
  });
});
