import type { GemmVariant } from './gemm-variants.ts';

/**
 * Timings within `tieFraction` of the fastest, or within one dispatch's floor of it where that is
 * more, are a tie: timing noise on the one side, a launch-bound proxy (whose ranking is noise) on
 * the other. A tie goes to the variant cheapest to compile (gemm-variants' byCompileCost): every
 * rank's device compiles each variant it uses, and the page pays that again on every new rank.
 */
export const tieFraction = 0.1;

/**
 * The winner among timed variants (ms per run): the cheapest to compile among those tied with the
 * fastest (within max(tieFraction · fastest, dispatchMs)). `byCompileCost` lists variants cheapest first.
 */
export function pickGemmVariant(msPerRun: Partial<Record<GemmVariant, number>>, byCompileCost: readonly GemmVariant[], dispatchMs: number): { chosen: GemmVariant; tied: GemmVariant[] } | undefined {
  const timed = byCompileCost.filter((v) => msPerRun[v] !== undefined);
  if (!timed.length) return undefined;
  const best = Math.min(...timed.map((v) => msPerRun[v]!));
  const tied = timed.filter((v) => msPerRun[v]! <= best + Math.max(best * tieFraction, dispatchMs));
  return { chosen: tied[0], tied };
}

/**
 * Whether a variant that ran in `ms` per run ties with any other, unseen: every GEMM takes at least
 * one dispatch floor, so the fastest is ≥ dispatchMs and its tie window reaches ≥ 2·dispatchMs.
 */
export function launchBound(ms: number, dispatchMs: number): boolean {
  return ms <= 2 * dispatchMs;
}
