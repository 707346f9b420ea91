import { describe, expect, test } from 'vitest';
import { createInProcessGroup } from '../../../src/comm/in-process.ts';
import { hostTensor, type HostTensor } from '../../../src/comm/host-tensor.ts';
import { numel } from '../../../src/core/shape.ts';
import {
  allGatherLastDimFromTensorParallelRegion,
  tensorParallelMappings,
  type MappingPair,
  type Placement,
} from '../../../src/parallel/mappings.ts';
import { randomArray } from '../comm/groups.ts';

/** Forward input shape per rank for global [s, b, h] = [2t, 2, 3t]. */
function inputShape(m: MappingPair, t: number): number[] {
  if (m.name === 'gatherFromTensorParallelRegion' || m.name === 'allGatherLastDimFromTensorParallelRegion')
    return [2 * t, 2, 3];
  if (m.name === 'gatherFromSequenceParallelRegion') return [2, 2, 3 * t];
  return [2 * t, 2, 3 * t];
}

/** Random per-rank tensors; a replicated placement gets the same tensor on every rank. */
function draw(shape: readonly number[], t: number, p: Placement, seed: number): HostTensor[] {
  return Array.from({ length: t }, (_, r) =>
    hostTensor(shape, randomArray(numel(shape), p === 'replicated' ? seed : seed + r + 1)),
  );
}

/** ⟨a, b⟩ in float64: a replicated tensor counts once (and must be equal on all ranks), per-rank tensors add up. */
function inner(a: HostTensor[], b: HostTensor[], p: Placement): number {
  if (p === 'replicated') a.forEach((x) => expect(Array.from(x.data)).toEqual(Array.from(a[0].data)));
  const ranks = p === 'replicated' ? [0] : a.map((_, r) => r);
  return ranks.reduce((acc, r) => acc + a[r].data.reduce((s, v, i) => s + v * b[r].data[i], 0), 0);
}

// The table's mappings, and the last-dim all-gather attention uses for the QKV activations when groups < t.
const pairs = [...tensorParallelMappings, allGatherLastDimFromTensorParallelRegion];

describe.each(pairs.map((m) => [m.name, m] as const))('%s', (_name, m) => {
  test.each([1, 2, 3, 4])(
    'backward is the transpose of forward at t = %i: ⟨A x, y⟩ = ⟨x, Aᵀ y⟩ to 1e-5 relative',
    async (t) => {
      const comms = createInProcessGroup(t);
      const x = draw(inputShape(m, t), t, m.input, 11);
      const ax = await Promise.all(comms.map((c, r) => m.forward(c, x[r])));
      const y = draw(ax[0].shape, t, m.output, 23);
      const aty = await Promise.all(comms.map((c, r) => m.backward(c, y[r])));
      aty.forEach((v) => expect(v.shape).toEqual(x[0].shape));
      const lhs = inner(ax, y, m.output);
      const rhs = inner(x, aty, m.input);
      expect(Math.abs(lhs - rhs)).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(lhs)));
    },
  );
});

test('each pair states its forward and backward in one line, as in DESIGN.md', () => {
  expect(tensorParallelMappings.map((m) => m.summary)).toEqual([
    'forward: identity · backward: all-reduce (f)',
    'forward: all-reduce · backward: identity (g)',
    'forward: split last dim · backward: all-gather last dim',
    'forward: all-gather last dim · backward: split last dim',
    'forward: split dim 0 · backward: all-gather dim 0',
    'forward: all-gather dim 0 · backward: reduce-scatter dim 0',
    'forward: reduce-scatter dim 0 · backward: all-gather dim 0',
  ]);
});
