import { describe, expect, test } from 'vitest';
import type { CollectiveArgs } from '../../../src/ranks/comm-programs.ts';
import { faultPool, poolTransports, rejectionOf } from './helpers.ts';

describe.each(poolTransports)('the logical tensor in the fingerprint across rank workers over %s', (transport) => {
  test('two same-shape reduce-scatters in swapped order fail on every rank, each error naming both tensors', async () => {
    const pool = await faultPool({ size: 2, transport, timeoutMs: 2_000 });
    // Rank 1 issues mlp.reduce where rank 0 issues attn.reduce: same op, dtype, shape and dim.
    const e = await rejectionOf(
      pool.run(
        'collective',
        (r): CollectiveArgs => ({
          op: 'reduceScatter',
          device: 'gpu',
          shape: [4, 2],
          dim: 0,
          data: new Float32Array(8),
          tensor: r === 0 ? 'attn.reduce' : 'mlp.reduce',
        }),
      ),
    );
    e.errors!.forEach((err, r) =>
      expect(err!.message).toBe(
        `rank ${r}: collective call differs across ranks: rank 0 called reduceScatter(dim 0, sum, f32 [4, 2]) of attn.reduce #1; ` +
          'rank 1 called reduceScatter(dim 0, sum, f32 [4, 2]) of mlp.reduce #1.',
      ),
    );
    await pool.dispose();
  });
});
