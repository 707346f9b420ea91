import { describe, expect, test } from 'vitest';
import { checkMoeConfig, moeConfig, moeConfigErrors } from '../../../../src/reference/moe/config.ts';

const sizes = { numMoeExperts: 8, moeRouterTopk: 2, moeFfnHiddenSize: 16 };

describe('MoE config validation names the field, its Megatron flag and what to write', () => {
  test('a valid config has no errors and passes through', () => {
    const c = moeConfig(sizes, { moeExpertCapacityFactor: 1.25, moeSharedExpertIntermediateSize: 32 });
    expect(moeConfigErrors(c)).toEqual([]);
    expect(checkMoeConfig(c)).toBe(c);
  });

  const bad: [string, Parameters<typeof moeConfig>, RegExp][] = [
    ['E = 0', [{ ...sizes, numMoeExperts: 0 }], /numMoeExperts \(num_moe_experts\) is 0; write an integer ≥ 1/],
    ['k > E', [{ ...sizes, moeRouterTopk: 9 }], /moeRouterTopk \(moe_router_topk\) is 9; write an integer in \[1, 8\]/],
    ['k = 0', [{ ...sizes, moeRouterTopk: 0 }], /moe_router_topk\) is 0/],
    ['f_moe fractional', [{ ...sizes, moeFfnHiddenSize: 2.5 }], /moe_ffn_hidden_size\) is 2.5/],
    [
      'capacity 0',
      [sizes, { moeExpertCapacityFactor: 0 }],
      /moe_expert_capacity_factor\) is 0; write a finite number > 0, or null for dropless/,
    ],
    ['capacity negative', [sizes, { moeExpertCapacityFactor: -1 }], /moe_expert_capacity_factor\) is -1/],
    ['aux coefficient negative', [sizes, { moeAuxLossCoeff: -0.1 }], /moe_aux_loss_coeff\) is -0.1/],
    ['z coefficient NaN', [sizes, { moeZLossCoeff: NaN }], /moe_z_loss_coeff\) is NaN/],
    ['shared size 0', [sizes, { moeSharedExpertIntermediateSize: 0 }], /moe_shared_expert_intermediate_size\) is 0/],
    ['padding to capacity', [sizes, { moePadExpertInputToCapacity: true }], /not implemented; write false/],
    [
      'top-1 softmax after top-k',
      [{ ...sizes, moeRouterTopk: 1 }],
      /write moeRouterPreSoftmax: true \(--moe-router-pre-softmax\)/,
    ],
  ];
  for (const [what, args, message] of bad)
    test(`${what} is refused`, () => {
      const c = moeConfig(...args);
      expect(moeConfigErrors(c)).toHaveLength(1);
      expect(() => checkMoeConfig(c)).toThrow(message);
    });

  test('top-1 is accepted with pre-softmax or sigmoid; sigmoid ignores pre-softmax, as Megatron does', () => {
    expect(moeConfigErrors(moeConfig(sizes, { moeRouterScoreFunction: 'sigmoid', moeRouterPreSoftmax: true }))).toEqual(
      [],
    );
    expect(moeConfigErrors(moeConfig({ ...sizes, moeRouterTopk: 1 }, { moeRouterPreSoftmax: true }))).toEqual([]);
    expect(moeConfigErrors(moeConfig({ ...sizes, moeRouterTopk: 1 }, { moeRouterScoreFunction: 'sigmoid' }))).toEqual(
      [],
    );
  });
});
