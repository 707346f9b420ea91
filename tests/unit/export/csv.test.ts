import { describe, expect, test } from 'vitest';
import { csvField, parseCsv, timelineCsv, timelineCsvHeader, toCsv } from '../../../src/export/csv.ts';
import { scheduleStep } from '../../../src/schedule/schedule.ts';
import { durations, tinyPlan } from '../schedule/tiny-plan.ts';

describe('CSV', () => {
  test('fields with commas, quotes or line breaks are quoted and quotes doubled', () => {
    expect(csvField('plain')).toBe('plain');
    expect(csvField('[4, 1]')).toBe('"[4, 1]"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('a\nb')).toBe('"a\nb"');
    expect(csvField(1.5)).toBe('1.5');
  });

  test('awkward text round-trips through the parser', () => {
    const rows = [
      ['a,b', 'q"uote', 'line\r\nbreak', ''],
      ['1', '2', '3', '4'],
    ];
    expect(parseCsv(toCsv(['h1', 'h2', 'h3', 'h4'], rows))).toEqual([['h1', 'h2', 'h3', 'h4'], ...rows]);
  });

  test('a schedule gives a header row and one row per op per rank that parse back to its numbers', () => {
    const plan = tinyPlan(2, ['a.gemm', 'x.reduce', 'b']);
    const tl = scheduleStep(
      plan,
      durations(plan, [
        [1, 2, 0.5],
        [3, 2, 0.25],
      ]),
      { overlap: false },
    );
    const [header, ...rows] = parseCsv(timelineCsv(tl.events));
    expect(header).toEqual([...timelineCsvHeader]);
    expect(rows).toHaveLength(2 * 3);
    const col = (name: (typeof timelineCsvHeader)[number]) => header!.indexOf(name);
    const reduce0 = rows.find((r) => r[col('rank')] === '0' && r[col('op')] === 'x.reduce')!;
    expect([
      reduce0[col('t0_ms')],
      reduce0[col('t1_ms')],
      reduce0[col('wait_ms')],
      reduce0[col('collective')],
      reduce0[col('group_size')],
    ]).toEqual(['1', '5', '2', 'allReduce', '2']);
    const gemm1 = rows.find((r) => r[col('rank')] === '1' && r[col('op')] === 'a.gemm')!;
    expect([gemm1[col('M')], gemm1[col('shapes')], Number(gemm1[col('gflop_per_s')])]).toEqual([
      '4',
      '[4, 8] · [8, 2] → [4, 2]',
      128 / (3 * 1e6),
    ]);
  });
});
