import { describe, expect, test } from 'vitest';
import { ringPlay } from '../../../../src/ui/classroom/ring-frames.ts';

const full = (t: number) => [...Array(t).keys()];

describe('ring frames', () => {
  for (const t of [2, 3, 4, 8]) {
    test(`all-reduce over ${t} ranks: 2(t−1) steps, one chunk per rank to its right neighbour each step, every chunk the full sum at the end`, () => {
      const p = ringPlay('allReduce', t);
      expect(p.frames).toHaveLength(2 * (t - 1));
      for (const f of p.frames) {
        expect(f.transfers.map((x) => [x.from, x.to])).toEqual(full(t).map((r) => [r, (r + 1) % t]));
        expect(new Set(f.transfers.map((x) => x.chunk)).size).toBe(t); // every chunk moves once per step
      }
      expect(p.frames[t - 2].after.map((row, r) => row[r].from)).toEqual(full(t).map(() => full(t))); // after RS: chunk r summed on rank r
      expect(
        p.frames
          .at(-1)!
          .after.flat()
          .every((s) => s.from.length === t && s.kept),
      ).toBe(true);
    });

    test(`reduce-scatter over ${t} ranks leaves rank r the full sum of chunk r and drops the rest; all-gather gives every rank every chunk`, () => {
      const rs = ringPlay('reduceScatter', t);
      expect(rs.frames).toHaveLength(t - 1);
      const end = rs.frames.at(-1)!.after;
      end.forEach((row, r) =>
        row.forEach((s, c) => {
          expect(s.kept).toBe(c === r);
          if (c === r) expect(s.from).toEqual(full(t));
        }),
      );
      const ag = ringPlay('allGather', t);
      expect(ag.start.map((row) => row.map((s) => s.from.length))).toEqual(
        full(t).map((r) => full(t).map((c) => Number(c === r))),
      );
      expect(ag.frames.at(-1)!.after.map((row) => row.map((s) => s.from))).toEqual(
        full(t).map(() => full(t).map((c) => [c])),
      );
    });
  }

  test('one rank has nothing to send', () => {
    expect(ringPlay('allReduce', 1).frames).toEqual([]);
  });
});
