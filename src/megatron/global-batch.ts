// The global batch of a fixed GPU budget N: b·N by default, or a user's value that every t on N can run.
import { parseWhole } from '../parallel/config-parse.ts';

/** A global batch setting: 'auto' is b·N (one micro-batch per replica at t = 1), else sequences per step. */
export type GlobalBatchSetting = number | 'auto';

/** Degrees t the fixed-budget table tries: powers of two with t·p dividing the budget N (p pipeline stages, default 1). */
export const budgetDegrees = (gpus: number, pp = 1): number[] =>
  [1, 2, 4, 8, 16].filter((t) => t * pp <= gpus && gpus % (t * pp) === 0);

/** Parses a `gbatch` value: "auto" or a whole number ≥ 1. */
export function parseGlobalBatch(text: string): GlobalBatchSetting {
  return text.trim() === 'auto' ? 'auto' : parseWhole('gbatch', text, 1);
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/**
 * The global batch G of a table over `degrees` with micro-batch b, N GPUs and p pipeline stages
 * (default 1). Each row runs m = G / (b · DP) micro-batches per replica, DP = N / (t·p), so G must
 * be a multiple of b·N/(t·p) for every t: of their least common multiple (b·N/p when t = 1 is a
 * row); 'auto' is b·N (m = t·p). Throws naming the nearest values that work and what else to change.
 */
export function resolveGlobalBatch(
  setting: GlobalBatchSetting,
  b: number,
  gpus: number,
  degrees: readonly number[],
  pp = 1,
): number {
  const unit = degrees.reduce((l, t) => {
    const per = (b * gpus) / (t * pp);
    return (l / gcd(l, per)) * per;
  }, 1);
  if (setting === 'auto') return b * gpus;
  if (setting % unit === 0) return setting;
  const below = Math.floor(setting / unit) * unit;
  const above = below + unit;
  const nearest = below > 0 ? `${below} or ${above}` : `${above}`;
  throw new Error(
    `gbatch (${setting} sequences) must be a multiple of b·DP = ${unit} for every t of ${degrees.join(', ')} ` +
      `on the GPU budget (b = ${b}, N = ${gpus}${pp > 1 ? `, p = ${pp}` : ''}): use ${nearest}, or change b or the GPU budget N.`,
  );
}
