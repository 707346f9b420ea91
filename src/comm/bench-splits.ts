import type { Splits } from './call.ts';

/**
 * The bench's uneven all-to-all of `elems` per rank over t ranks: rank q sends rank r a share
 * w(q, r) = 1 + (q + r) mod t of W = t(t + 1)/2, cut at floor(elems·Σw/W), so each rank sends its
 * t peers t different amounts (1/W … t/W of its input) and receives about `elems` (Σ_q w(q, r) = W).
 */
export function benchSplits(elems: number, t: number, r: number): Splits {
  const w = (q: number, j: number): number => 1 + ((q + j) % t);
  const total = (t * (t + 1)) / 2;
  const cuts = (q: number): number[] => {
    let cum = 0;
    return [...Array(t).keys()].map((j) => {
      const lo = Math.floor((elems * cum) / total);
      cum += w(q, j);
      return Math.floor((elems * cum) / total) - lo;
    });
  };
  return { send: cuts(r), recv: [...Array(t).keys()].map((q) => cuts(q)[r]!) };
}
