import { describe, expect, test } from 'vitest';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { collectiveOf, gemmOf, type PlannedOp } from '../../../src/parallel/plan-types.ts';
import { makePlan } from '../../../src/parallel/plan.ts';

/** The attention's QKV ops of a plan, in order, as "name:kind". */
const qkvOps = (ops: readonly PlannedOp[]) =>
  ops.filter((o) => o.name === 'qkv' || o.name.startsWith('qkv.')).map((o) => `${o.name}:${o.kind}`);

describe('groups < t: linear_qkv as Megatron-Core runs it (even split, all-gather last dim, reduce-scatter back)', () => {
  test('llama-gqa at t = 8: one [64, 48]·… GEMM, the all-gather [64, 1, 48] → [64, 1, 384], q/k/v copied out; backward the reverse', async () => {
    const c = configFromPreset('llama-gqa', { tp: 8 });
    const { plan } = await makePlan(c);
    expect(qkvOps(plan.ops)).toEqual([
      'qkv:gemm',
      'qkv.gather:collective',
      'qkv.split.q:kernel',
      'qkv.split.k:kernel',
      'qkv.split.v:kernel',
      'qkv.split.q.backward:kernel',
      'qkv.split.k.backward:kernel',
      'qkv.split.v.backward:kernel',
      'qkv.gather.backward:collective',
      'qkv.dgrad:gemm',
      'qkv.wgrad:gemm',
    ]);
    const op = (name: string) => plan.ops.find((o) => o.name === name)!;
    expect(gemmOf(op('qkv'))).toMatchObject({ M: 64, N: 48, K: 256 });
    expect(op('qkv')).toMatchObject({ split: 'column', weight: 'wqkv', megatron: 'ColumnParallelLinear (linear_qkv)' });
    const S = 64 * 384 * 4;
    expect(op('qkv.gather')).toMatchObject({ phase: 'forward', role: 'forward', split: 'column' });
    expect(op('qkv.gather').megatron).toMatch(
      /^allGatherLastDimFromTensorParallelRegion — forward: all-gather last dim/,
    );
    expect(collectiveOf(op('qkv.gather'))).toMatchObject({
      op: 'allGather',
      dim: -1,
      inShape: [64, 1, 48],
      outShape: [64, 1, 384],
      payloadBytes: S,
      ringBytesSent: (7 * S) / 8,
    });
    expect(op('qkv.gather.backward')).toMatchObject({ phase: 'backward', role: 'dgrad' });
    expect(collectiveOf(op('qkv.gather.backward'))).toMatchObject({
      op: 'reduceScatter',
      dim: -1,
      inShape: [64, 1, 384],
      outShape: [64, 1, 48],
      payloadBytes: S,
    });
    expect(op('qkv.split.q').outShape).toEqual([64, 32]);
    expect(gemmOf(op('qkv.dgrad'))).toMatchObject({ M: 64, N: 256, K: 48 });
    expect(gemmOf(op('qkv.wgrad'))).toMatchObject({ M: 256, N: 48, K: 64 });
    // No replica machinery is left.
    expect(plan.ops.some((o) => o.name.includes('replicas'))).toBe(false);
  });

  test('under SP the norm output is re-gathered after the reduce-scatter, right before the dgrad GEMM (Megatron: gather before dgrad)', async () => {
    const { plan } = await makePlan(configFromPreset('llama-gqa', { tp: 4, sp: true }));
    const names = plan.ops.map((o) => o.name);
    const at = (n: string) => names.indexOf(n);
    expect(at('qkv.gather.backward')).toBeLessThan(at('ln1.regather'));
    expect(at('ln1.regather')).toBe(at('qkv.dgrad') - 1);
    expect(at('attn.dgrad.reduce')).toBeLessThan(at('qkv.wgrad'));
    expect(plan.ops[at('qkv.dgrad')].overlap.underAsync).toBe(true);
  });

  test('groups ≥ t keeps the three Q, K, V GEMMs and no QKV collective (llama-gqa at t = 2)', async () => {
    const { plan } = await makePlan(configFromPreset('llama-gqa', { tp: 2 }));
    expect(qkvOps(plan.ops)).toEqual([
      'qkv.q:gemm',
      'qkv.k:gemm',
      'qkv.v:gemm',
      'qkv.q.dgrad:gemm',
      'qkv.k.dgrad:gemm',
      'qkv.v.dgrad:gemm',
      'qkv.q.wgrad:gemm',
      'qkv.k.wgrad:gemm',
      'qkv.v.wgrad:gemm',
    ]);
  });
});
