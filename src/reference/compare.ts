/** Worst errors of `actual` against `expected`, and where the worst absolute one is. */
export interface ErrorStats {
  readonly maxAbs: number;
  readonly maxRel: number;
  readonly worstIndex: number;
  readonly nonFinite: number;
}

/**
 * Elementwise comparison. Relative error is |a−e| / max(|e|, floor), the floor keeping values
 * near zero from dominating; NaN/Inf in `actual` where `expected` is finite count as nonFinite.
 */
export function compareArrays(actual: ArrayLike<number>, expected: ArrayLike<number>, floor = 1e-3): ErrorStats {
  if (actual.length !== expected.length) {
    throw new Error(`compareArrays: lengths ${actual.length} and ${expected.length} differ.`);
  }
  let maxAbs = 0;
  let maxRel = 0;
  let worstIndex = -1;
  let nonFinite = 0;
  for (let i = 0; i < actual.length; i++) {
    const a = actual[i];
    const e = expected[i];
    if (!Number.isFinite(a) && Number.isFinite(e)) {
      nonFinite++;
      continue;
    }
    if (!Number.isFinite(a) && a === e) continue;
    const abs = Math.abs(a - e);
    if (abs > maxAbs) {
      maxAbs = abs;
      worstIndex = i;
    }
    maxRel = Math.max(maxRel, abs / Math.max(Math.abs(e), floor));
  }
  return { maxAbs, maxRel, worstIndex, nonFinite };
}

/**
 * Absolute tolerance for a float32 result accumulated over `terms` addends of magnitude ≤ `scale`
 * (for a dot product: |a|max·|b|max). Each float32 add rounds by ≤ ε·|partial sum|; with
 * random-sign addends the partial sums grow like √k·scale and the rounding errors add up to
 * about ε·scale·terms/√2. We allow 4·ε·scale·(terms + 1): loose enough for any summation order
 * (sequential, blocked, tree), and still orders of magnitude below what an indexing bug gives.
 */
export function float32Tolerance(terms: number, scale = 1): number {
  return 4 * 2 ** -23 * scale * (Math.max(1, terms) + 1);
}
