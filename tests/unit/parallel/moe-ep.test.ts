import { describe, expect, test } from 'vitest';
import { CpuBackend, float64Alloc } from '../../../src/parallel/backend-cpu.ts';
import { moeEpBlock } from '../../../src/parallel/moe-ep.ts';
import { moeConfig } from '../../../src/reference/moe/config.ts';
import { seededMoeWeights } from '../../../src/reference/moe/weights.ts';
import { expectMoeEpMatches, moeEpProblem, rankRows, type MoeEpCase } from '../../moe-ep-cases.ts';
import { makeMesh } from '../comm/mesh-groups.ts';

// The MoE block under expert parallelism on the CPU backend (float64 twins) over in-process and
// MessagePort EP groups equals moeForward/moeBackward of the concatenated tokens (dropless) or of
// each rank's tokens (capacity factor 1, dropping by probability: tests/moe-ep-cases.ts). What is not
// float64: the all-to-alls, all-reduces and Backend.read carry float32, so O(1) values (|y|, the
// gradients ≤ 4 here) are rounded a few times by 2^-24 relative: tolerance 1e-6; logits are
// rounded once (|l| < 4: < 3e-7), so a routing margin above 1e-6 keeps every decision.
const [T, h] = [8, 8];
const tol = 1e-6;

const sizes = (capacity?: number): MoeEpCase[] =>
  [1, 2, 4].flatMap((ep) => [4, 8].flatMap((E) => [1, 2].map((k) => ({ ep, E, k, capacity }))));
const grid: MoeEpCase[] = [
  ...sizes(),
  ...sizes(1),
  { ep: 2, E: 8, k: 2, score: 'sigmoid' },
  { ep: 4, E: 4, k: 1, score: 'sigmoid' },
  { ep: 4, E: 8, k: 2, capacity: 1, skew: 3 },
];

describe.each(['in-process', 'message-port'] as const)('the MoE block with expert parallelism over %s', (kind) => {
  test.each(grid)(
    "at %o equals the single-device block (dropless: of the concatenated tokens; capacity: of each rank's)",
    async (cs) => {
      const p = moeEpProblem(cs, T, h);
      const m = makeMesh(kind, cs.ep > 1 ? { dp: cs.ep, ep: cs.ep } : {});
      const results = await Promise.all(
        [...Array(cs.ep).keys()].map((q) =>
          moeEpBlock(
            new CpuBackend(float64Alloc),
            m.comm(q, 'ep'),
            p.c,
            h,
            rankRows(p.x, q, T, h),
            rankRows(p.dy, q, T, h),
            p.w,
          ),
        ),
      );
      expectMoeEpMatches(p, results, tol, 1e-6);
      // each rank: counts, dispatch, combine, aux counts, losses, the two backward all-to-alls, dWr
      if (cs.ep > 1)
        expect(m.recorders[0]!.peek().map((e) => e.comm?.tensor)).toEqual([
          'moe.tokens_per_expert',
          'moe.dispatch',
          'moe.combine',
          'moe.aux.counts',
          'moe.losses',
          'moe.combine.grad',
          'moe.dispatch.grad',
          'moe.router.grad',
        ]);
      m.close();
    },
  );
});

test('a shared expert and E not divisible by ep are refused before anything moves', async () => {
  const m = makeMesh('in-process', { dp: 4, ep: 4 });
  const c = moeConfig(
    { numMoeExperts: 6, moeRouterTopk: 2, moeFfnHiddenSize: 4 },
    { moeExpertCapacityFactor: 1, moeSharedExpertIntermediateSize: 4 },
  );
  const x = new Float64Array(2 * 4);
  await expect(
    moeEpBlock(new CpuBackend(float64Alloc), m.comm(0, 'ep'), c, 4, x, x, seededMoeWeights(c, 4, 1)),
  ).rejects.toThrow(/6 experts do not split over 4 EP ranks.*shared expert is not implemented/);
  m.close();
});
