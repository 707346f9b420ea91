import { describe, expect, test } from 'vitest';
import { parameterShards } from '../../../src/accounting/parameters.ts';
import { configFromPreset, type PresetName } from '../../../src/parallel/config.ts';
import { rankOwnership } from '../../../src/parallel/ownership.ts';
import { rankWeightArrays } from '../../../src/parallel/step-data.ts';
import { weightsOf } from '../../../src/parallel/weights.ts';

describe('the weights table (src/accounting/parameters.ts)', () => {
  test.each([
    ['classroom', 1, false],
    ['classroom', 4, true],
    ['gpt2-layer', 2, false],
    ['llama-gqa', 8, true],
  ] as [PresetName, number, boolean][])(
    'of %s at t = %i (SP %s) lists every parameter the ranks upload, with the bytes of the shard each rank is cut',
    (preset, t, sp) => {
      const c = configFromPreset(preset, { tp: t, sp });
      for (const own of rankOwnership(c)) {
        const rows = parameterShards({ config: c, ranks: rankOwnership(c) }, own.rank);
        const uploaded = rankWeightArrays(c, own);
        expect(new Set(rows.map((r) => r.weight))).toEqual(new Set(weightsOf(c)));
        for (const w of weightsOf(c)) {
          const bytes = rows.filter((r) => r.weight === w).reduce((a, r) => a + r.bytes, 0);
          expect(bytes, `rank ${own.rank} ${w}`).toBe(4 * uploaded[w]!.data.length);
        }
      }
    },
  );
});
