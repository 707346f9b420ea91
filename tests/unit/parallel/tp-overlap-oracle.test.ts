import { describe, expect, test } from 'vitest';
import { configFromPreset, type LayerConfig } from '../../../src/parallel/config.ts';
import { compareWithReference, referenceConfig } from '../../../src/parallel/oracle.ts';
import { runInProcess } from '../../../src/parallel/run-in-process.ts';
import { stepInputs } from '../../../src/parallel/step-data.ts';

// t = 8 needs 8 heads; s = 32 gives each rank 4 tokens under SP, so c = t (a chunk is a rank's
// shard) and c = 2t (two pieces of each shard) are legal at every t, and c = 2, 4 where they divide t
// (a chunk is t/c shards); without SP c divides s. Under SP: the c ∈ {2, 4} and t, 2t.
const sizes = { s: 32, b: 2, h: 32, heads: 8, groups: 2, ffn: 64, vocab: 64 };

async function oracle(c: LayerConfig) {
  const inputs = stepInputs(c);
  const ref = await runInProcess(referenceConfig(c), inputs);
  const got = await runInProcess(c, inputs);
  return compareWithReference(c, ref, got);
}

describe('chunked TP overlap in Node (CPU twins, in-process collectives) matches TP=1', () => {
  for (const tp of [2, 4, 8])
    for (const sp of [false, true])
      for (const chunks of sp ? [...new Set([2, 4, tp, 2 * tp])].sort((a, b) => a - b) : [2, 4])
        test(`t=${tp}, c=${chunks}${sp ? ' with SP' : ''}`, async () => {
          const r = await oracle({ ...configFromPreset('classroom'), ...sizes, tp, sp, tpOverlapChunks: chunks });
          const bad = r.entries.filter((e) => !e.pass).map((e) => `${e.tensor}: ${e.maxAbs} > ${e.tol}`);
          expect(r.pass, bad.join('; ')).toBe(true);
        });
});
