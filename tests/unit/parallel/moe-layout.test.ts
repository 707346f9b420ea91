import { expect, test } from 'vitest';
import {
  moeLayout,
  moeLayoutErrors,
  moeMeshDegrees,
  moeTrainingRefusal,
  moeWorld,
} from '../../../src/parallel/moe-layout.ts';
import { moeConfig, moeConfigErrors, routerBias } from '../../../src/reference/moe/config.ts';

const c = moeConfig({ numMoeExperts: 8, moeRouterTopk: 2, moeFfnHiddenSize: 6 });

test('a layout folds the attention mesh tp·dp and the expert mesh etp·ep·edp onto lcm(tp, etp·ep) ranks', () => {
  expect(moeWorld(moeLayout(4))).toBe(4);
  expect(moeMeshDegrees(moeLayout(4))).toEqual({ tp: 1, dp: 4, ep: 4, etp: 1 });
  expect(moeWorld(moeLayout(2, { tp: 2, sp: true, etp: 2 }))).toBe(4);
  expect(moeMeshDegrees(moeLayout(1, { tp: 2, sp: true }))).toEqual({ tp: 2, dp: 1, ep: 1, etp: 1 });
  expect(moeWorld(moeLayout(2, { tp: 3, sp: true }))).toBe(6);
});

test('each bad layout is named with its legal values', () => {
  expect(moeLayoutErrors(c, moeLayout(4))).toEqual([]);
  expect(moeLayoutErrors(c, moeLayout(3)).join(' ')).toMatch(/ep 3 does not divide 8 experts.*\{1, 2, 4, 8\}/);
  expect(moeLayoutErrors(c, moeLayout(0)).join(' ')).toMatch(/ep is 0; write a whole number ≥ 1/);
  const both = moeLayoutErrors(c, moeLayout(8, { etp: 4 })).join(' ');
  expect(both).toMatch(/etp 4 does not divide moeFfnHiddenSize 6.*\{1, 2, 3, 6\}/);
  expect(both).toMatch(/etp 4 × ep 8 fold onto 32 ranks, more than the 16 here/);
  expect(moeLayoutErrors(c, moeLayout(2, { tp: 2 })).join(' ')).toMatch(
    /tp 2 without sequence parallelism: Megatron refuses it in training \(megatron\/core\/transformer\/moe\/moe_layer\.py:629-633, ValueError: .*\); turn sp on, or run it as the M036 demonstration/,
  );
  expect(moeLayoutErrors(c, moeLayout(2, { tp: 2 }), { demonstration: true })).toEqual([]);
  expect(moeTrainingRefusal(moeLayout(2, { tp: 2, sp: true }))).toBeNull();
  expect(moeTrainingRefusal(moeLayout(2, { tp: 2 }))?.error).toBe('ValueError');
  expect(moeLayoutErrors({ ...c, moeSharedExpertIntermediateSize: 4 }, moeLayout(2))).toEqual([]);
  expect(
    moeLayoutErrors({ ...c, moeSharedExpertIntermediateSize: 3 }, moeLayout(2, { tp: 2, sp: true })).join(' '),
  ).toMatch(/tp 2 does not divide moeSharedExpertIntermediateSize 3.*divisible by 2/);
});

test('the router skew biases expert 0 by +skew and expert E − 1 by −skew, linear between, and must be finite', () => {
  expect(Array.from(routerBias({ ...c, numMoeExperts: 5, routerSkew: 2 }))).toEqual([2, 1, 0, -1, -2]);
  expect(Array.from(routerBias({ ...c, numMoeExperts: 1, routerSkew: 2 }))).toEqual([0]);
  expect(moeConfigErrors({ ...c, routerSkew: Number.NaN }).join(' ')).toMatch(
    /routerSkew is NaN; write a finite number/,
  );
});
