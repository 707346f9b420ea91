import { describe, expect, test } from 'vitest';
import { CpuBackend, float64Alloc } from '../../../src/parallel/backend-cpu.ts';
import { PlanBackend } from '../../../src/parallel/backend-plan.ts';
import { moeExpertsBackward, moeExpertsForward } from '../../../src/parallel/moe-experts.ts';
import { moeBackward, moeForward } from '../../../src/reference/moe/block.ts';
import { moeConfig } from '../../../src/reference/moe/config.ts';
import { seededMoeWeights } from '../../../src/reference/moe/weights.ts';
import { randomArray } from '../../../src/reference/random.ts';
import { moeChain } from '../../gpu/kernels/moe/moe-chain.ts';
import { expectNear } from '../finite-diff.ts';

// The block through the registered kernels on the CPU backend with float64 storage (the twins)
// equals the float64 block. Backend.read rounds to float32 (also the prob gradient the host's
// router backward reads), so O(1) values agree to ≈ 6e-8 relative: tolerance 1e-6.
describe('the MoE experts and combine on the CPU backend equal the float64 block', () => {
  test('E 4, top-2, capacity 0.75 dropping by position, z-loss', async () => {
    const c = moeConfig(
      { numMoeExperts: 4, moeRouterTopk: 2, moeFfnHiddenSize: 5 },
      { moeExpertCapacityFactor: 0.75, moeTokenDropPolicy: 'position', moeZLossCoeff: 0.01, moeAuxLossCoeff: 0.1 },
    );
    const h = 6;
    const T = 10;
    const w = seededMoeWeights(c, h, 21);
    const x = Float64Array.from(randomArray(T * h, 22));
    const dy = Float64Array.from(randomArray(T * h, 23));
    const ref = moeForward(c, h, T, x, w);
    expect(ref.routing.dropped).toBeGreaterThan(0);
    const grads = moeBackward(c, h, x, w, ref, dy);
    const r = await moeChain(new CpuBackend(float64Alloc), c, h, x, w, dy, ref);
    expect(Array.from(r.topIdx)).toEqual(Array.from(ref.routing.topIdx));
    expectNear('probs', r.topProb, ref.routing.topProb, 1e-6);
    expectNear('y', r.y, ref.y, 1e-6);
    expectNear('dfc1', r.fc1, grads.fc1, 1e-6);
    expectNear('dfc2', r.fc2, grads.fc2, 1e-6);
    expectNear('dx', r.dx, grads.dx, 1e-6);
    expectNear('dWr', r.router, grads.router, 1e-6);
  });
});

describe('the MoE experts on the plan backend', () => {
  test('record each grouped GEMM with its FLOPs (2·N·K·Nc) and role, and the SwiGLU between', () => {
    const plan = new PlanBackend();
    const [N, h, f, E] = [12, 8, 6, 4];
    const t = (name: string, shape: number[]) => plan.tensor(name, shape);
    const [fc1, fc2, off] = [t('fc1', [E, h, 2 * f]), t('fc2', [E, f, h]), t('offsets', [E + 1])];
    const { yp, saved } = moeExpertsForward(plan, t('xp', [N, h]), fc1, fc2, off, f);
    expect(plan.shapeOf(yp)).toEqual([N, h]);
    plan.phase = 'backward';
    moeExpertsBackward(plan, t('dyp', [N, h]), saved, fc1, fc2, off, t('dfc1', [E, h, 2 * f]), t('dfc2', [E, f, h]));
    const gemms = plan.ops.flatMap((o) =>
      o.kind === 'kernel' && o.kernel.startsWith('moeGroupedGemm') ? [[o.name, o.flops, o.role]] : [],
    );
    expect(gemms).toEqual([
      ['moe.fc1', 2 * N * h * 2 * f, 'forward'],
      ['moe.fc2', 2 * N * f * h, 'forward'],
      ['moe.fc2.wgrad', 2 * N * f * h, 'wgrad'],
      ['moe.fc2.dgrad', 2 * N * h * f, 'dgrad'],
      ['moe.fc1.wgrad', 2 * N * h * 2 * f, 'wgrad'],
      ['moe.fc1.dgrad', 2 * N * 2 * f * h, 'dgrad'],
    ]);
    expect(plan.ops.some((o) => o.kind === 'kernel' && o.kernel === 'swiglu')).toBe(true);
  });
});
