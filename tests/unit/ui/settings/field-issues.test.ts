import { expect, test } from 'vitest';
import { configFromPreset } from '../../../../src/parallel/config.ts';
import { validateConfig } from '../../../../src/parallel/validate.ts';
import { placeIssues } from '../../../../src/ui/settings/field-issues.ts';

test('an illegal degree chosen at the TP control is shown next to the TP control', () => {
  const { errors } = validateConfig(configFromPreset('classroom', { tp: 8 }));
  const placed = placeIssues(errors, 'tp');
  expect(placed.length).toBeGreaterThan(0);
  expect(placed.every((p) => p.field === 'tp')).toBe(true);
  expect(placed[0].message).toMatch(/heads \(4\) must be divisible by the TP degree t = 8/);
});

test('the same issue after a change of heads is shown next to heads', () => {
  const { errors } = validateConfig(configFromPreset('classroom', { tp: 4, heads: 2 }));
  expect(placeIssues(errors, 'heads').map((p) => p.field)).toContain('heads');
});

test('without a changed control an issue goes to its own field, and fields without a control to the preset', () => {
  const { errors } = validateConfig(configFromPreset('classroom', { tp: 4, ffn: 30, seed: -1 }));
  const fields = placeIssues(errors).map((p) => p.field);
  expect(fields).toContain('ffn');
  expect(fields).toContain('preset');
});
