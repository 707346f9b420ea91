import { describe, expect, test } from 'vitest';
import { GpuBackend } from '../../../../src/ranks/backend-gpu.ts';
import { moeBackward, moeForward } from '../../../../src/reference/moe/block.ts';
import { moeConfig, type MoeConfig } from '../../../../src/reference/moe/config.ts';
import { routingMargin } from '../../../../src/reference/moe/routing.ts';
import { seededMoeWeights } from '../../../../src/reference/moe/weights.ts';
import { randomArray } from '../../../../src/reference/random.ts';
import { expectClose, gpuCase } from '../../gpu-case.ts';
import { moeChain } from './moe-chain.ts';

// The MoE block's kernels composed on the GPU (top-k, permute, grouped GEMMs, SwiGLU, combine and
// their backward) against the float64 single-device block. Tolerance: the float32 chain of three
// GEMM-like stages (≤ 2f, h terms) over O(1) values; the relative rounding bound 4ε·(terms + 1)
// per stage, summed, is ≈ 1e-5 of the values' scale (≤ 4 here): 1e-4 absolute.
const tol = 1e-4;

describe('the MoE block on the GPU kernels equals the float64 block', () => {
  const h = 32;
  const T = 48;
  const cases: [string, MoeConfig][] = [
    [
      'E 8, top-2 softmax after top-k, dropless, aux and z losses',
      moeConfig(
        { numMoeExperts: 8, moeRouterTopk: 2, moeFfnHiddenSize: 24 },
        { moeAuxLossCoeff: 0.01, moeZLossCoeff: 0.001 },
      ),
    ],
    [
      'E 8, top-2 sigmoid, capacity 1, aux and z losses',
      moeConfig(
        { numMoeExperts: 8, moeRouterTopk: 2, moeFfnHiddenSize: 24 },
        { moeRouterScoreFunction: 'sigmoid', moeExpertCapacityFactor: 1, moeAuxLossCoeff: 0.01, moeZLossCoeff: 0.001 },
      ),
    ],
    [
      'E 4, top-1 pre-softmax, capacity 1 dropping by probability',
      moeConfig(
        { numMoeExperts: 4, moeRouterTopk: 1, moeFfnHiddenSize: 16 },
        { moeRouterPreSoftmax: true, moeExpertCapacityFactor: 1 },
      ),
    ],
  ];
  for (const [name, c] of cases)
    test(`${name}: routing, output and every gradient within ${tol}`, async () => {
      const w = seededMoeWeights(c, h, 11);
      const x = Float64Array.from(randomArray(T * h, 12));
      const dy = Float64Array.from(randomArray(T * h, 13));
      const ref = moeForward(c, h, T, x, w);
      const grads = moeBackward(c, h, x, w, ref, dy);
      if (c.moeExpertCapacityFactor !== null) expect(ref.routing.dropped).toBeGreaterThan(0);
      expect(routingMargin(c, ref.logits, ref.routing)).toBeGreaterThan(1e-5);
      await gpuCase(async (ctx) => {
        const be = new GpuBackend(ctx);
        const r = await moeChain(be, c, h, x, w, dy, ref);
        be.releaseAll();
        // logits are rounded to float32 on upload (≤ 2^-24·16 ≈ 1e-6 for |l| ≤ h·0.5 = 16): a routing margin
        // above 1e-5 keeps every decision of the float64 routing
        expect(Array.from(r.topIdx)).toEqual(Array.from(ref.routing.topIdx));
        expectClose('probs', r.topProb, ref.routing.topProb, tol);
        expectClose('y', r.y, ref.y, tol);
        expectClose('aux, z', Float32Array.from([r.aux, r.z]), [ref.aux, ref.z], tol);
        expectClose('dfc1', r.fc1, grads.fc1, tol);
        expectClose('dfc2', r.fc2, grads.fc2, tol);
        expectClose('dx', Float32Array.from(r.dx), grads.dx, tol);
        expectClose('dWr', Float32Array.from(r.router), grads.router, tol);
      });
    });
});
