import { describe, expect, test } from 'vitest';
import { hostTensor } from '../../../src/comm/host-tensor.ts';
import { opSpec } from '../../../src/parallel/backend.ts';
import { CpuBackend, float64Alloc } from '../../../src/parallel/backend-cpu.ts';
import { PlanBackend } from '../../../src/parallel/backend-plan.ts';
import { addInPlaceKernel, addKernel } from '../../../src/reference/add.ts';
import { moeGroupedGemmKernel, moeGroupedGemmWgradKernel } from '../../../src/reference/moe/grouped-gemm.ts';
import { randomArray } from '../../../src/reference/random.ts';
import { rmsnormWeightGradKernel } from '../../../src/reference/rmsnorm.ts';
import { swigluBackwardKernel } from '../../../src/reference/swiglu.ts';

// Backend.kernel runs a grid kernel from its descriptor alone: the CPU backend its twin into the
// written bindings, the plan backend its inputs, output, FLOPs and Megatron module.
const op = opSpec('mlp.act.dgrad', 'column');

describe('Backend.kernel from a descriptor', () => {
  test('CPU: every written binding receives its twin output, in binding order', () => {
    const cpu = new CpuBackend();
    // g = 0: silu(0) = 0 and σ(0) = 1/2, so du = dy · 0 = 0 and dg = dy · u · ½ · (1 + 0).
    const g = hostTensor([2, 2], new Float32Array(4));
    const u = hostTensor([2, 2], Float32Array.from([1, 2, 3, 4]));
    const dy = hostTensor([2, 2], Float32Array.from([2, 2, -2, 0.5]));
    const dg = hostTensor([2, 2], new Float32Array(4).fill(9));
    const du = hostTensor([2, 2], new Float32Array(4).fill(9));
    cpu.kernel(op, swigluBackwardKernel, [g, u, dy, dg, du], {});
    expect(Array.from(dg.data)).toEqual([1, 2, -3, 1]);
    expect(Array.from(du.data)).toEqual([0, 0, -0, 0]); // dy · g · σ(g) with dy = −2: −0
  });

  test('CPU: a read_write binding is updated in place', () => {
    const cpu = new CpuBackend();
    const acc = hostTensor([3], Float32Array.from([1, 2, 3]));
    cpu.kernel(op, addInPlaceKernel, [acc, hostTensor([3], Float32Array.from([10, 20, 30]))], {});
    expect(Array.from(acc.data)).toEqual([11, 22, 33]);
  });

  test('CPU: non-tensor arguments reach the twin — rmsnormWeightGrad over two row blocks, the second accumulated, is it over all rows', () => {
    const cpu = new CpuBackend(float64Alloc);
    const x = cpu.tensor('x', [6, 4], randomArray(24, 1));
    const dy = cpu.tensor('dy', [6, 4], randomArray(24, 2));
    const rstd = cpu.tensor('rstd', [6]);
    const whole = cpu.tensor('dg', [4]);
    const blocks = cpu.tensor('dg', [4], new Float64Array(4).fill(7)); // overwritten by the first block
    cpu.kernel(op, rmsnormWeightGradKernel, [x, rstd, dy, whole], { eps: 1e-5 });
    cpu.kernel(op, rmsnormWeightGradKernel, [x, rstd, dy, blocks], { eps: 1e-5, rowEnd: 2 });
    cpu.kernel(op, rmsnormWeightGradKernel, [x, rstd, dy, blocks], { eps: 1e-5, rowStart: 2, accumulate: true });
    blocks.data.forEach((v, j) => expect(v).toBeCloseTo(whole.data[j], 12));
    expect(whole.data.some((v) => Math.abs(v) > 0.1)).toBe(true);
  });

  test('a tensor of the wrong shape is refused, naming the kernel, the binding and the shapes', () => {
    const cpu = new CpuBackend();
    const a = hostTensor([2, 3]);
    expect(() => cpu.kernel(op, addKernel, [a, hostTensor([3, 2]), hostTensor([2, 3])], {})).toThrow(
      /add: tensor "b" has shape \[3, 2\] but \[2, 3\] is required \(its b, for "a" of shape \[2, 3\]\)/,
    );
    expect(() => cpu.kernel(op, addKernel, [a, a], {})).toThrow(/add: got 2 tensors; it takes 3 \(a, b, out\)/);
  });

  test('plan: the bindings read are the inputs, the first written the output; FLOPs and module from the descriptor', () => {
    const plan = new PlanBackend();
    plan.phase = 'backward';
    const t = (name: string) => plan.tensor(name, [4, 8]);
    plan.kernel(op, swigluBackwardKernel, [t('g'), t('u'), t('dy'), t('dg'), t('du')], {});
    plan.kernel(op, addInPlaceKernel, [t('acc'), t('b')], {});
    expect(
      plan.ops.map((o) => (o.kind === 'kernel' ? [o.kernel, o.inShapes.length, o.flops, o.megatron, o.role] : o.kind)),
    ).toEqual([
      ['swigluBackward', 3, 12 * 32, 'SwiGLU activation (MLP)', 'dgrad'],
      ['addInPlace', 2, 32, 'residual connection', 'dgrad'],
    ]);
  });

  test('plan: a weight-gradient kernel is recorded as wgrad, its FLOPs counted over the input its cost names', () => {
    const plan = new PlanBackend();
    plan.phase = 'backward';
    const x = plan.tensor('x', [6, 8]);
    plan.kernel(
      op,
      rmsnormWeightGradKernel,
      [x, plan.tensor('rstd', [6]), plan.tensor('dy', [6, 8]), plan.tensor('dg', [8])],
      {
        eps: 1e-5,
      },
    );
    expect(plan.ops[0]).toMatchObject({ kind: 'kernel', kernel: 'rmsnormWeightGrad', role: 'wgrad', flops: 3 * 48 });
    // Its inputs are x and dy (planned.reads): rstd, one value per row, is not counted as read.
    expect(plan.ops[0]).toMatchObject({
      inShapes: [
        [6, 8],
        [6, 8],
      ],
      outShape: [8],
    });
  });

  test('plan: the grouped GEMM counts 2·N·K·Nc FLOPs whatever the split over experts (cost.perElementOf)', () => {
    const plan = new PlanBackend();
    const t = (name: string, shape: number[]) => plan.tensor(name, shape);
    const off = t('offsets', [5]);
    plan.kernel(op, moeGroupedGemmKernel, [t('xp', [10, 6]), t('fc1', [4, 6, 14]), off, t('h', [10, 14])], {
      transB: false,
    });
    plan.phase = 'backward';
    plan.kernel(op, moeGroupedGemmWgradKernel, [t('xp', [10, 6]), t('dh', [10, 14]), off, t('dfc1', [4, 6, 14])], {});
    expect(plan.ops.map((o) => (o.kind === 'kernel' ? [o.kernel, o.flops, o.role] : o.kind))).toEqual([
      ['moeGroupedGemm', 2 * 10 * 6 * 14, 'forward'],
      ['moeGroupedGemmWgrad', 2 * 10 * 6 * 14, 'wgrad'],
    ]);
  });
});
