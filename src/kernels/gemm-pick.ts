import type { GemmVariant } from './gemm-variants.ts';

/**
 * Whether a variant that ran in `ms` per run is launch-bound: within two dispatch floors. Nothing
 * runs faster than one floor, so such a variant is within one dispatch of the fastest there could
 * be, a difference the timing cannot tell from noise.
 */
export function launchBound(ms: number, dispatchMs: number): boolean {
  return ms <= 2 * dispatchMs;
}

/**
 * The winner among timed variants (ms per run): the fastest, except that launch-bound variants
 * tie with it, and a tie goes to the variant cheapest to compile (`byCompileCost` lists them
 * cheapest first) — every rank's device compiles each variant it uses, and the page pays that
 * again for every rank it starts. Above the launch-bound regime the fastest wins outright: a proxy
 * 10% apart was 20–30% apart at full size.
 */
export function pickGemmVariant(
  msPerRun: Partial<Record<GemmVariant, number>>,
  byCompileCost: readonly GemmVariant[],
  dispatchMs: number,
): { chosen: GemmVariant; tied: GemmVariant[] } | undefined {
  const timed = byCompileCost.filter((v) => msPerRun[v] !== undefined);
  if (!timed.length) return undefined;
  const best = Math.min(...timed.map((v) => msPerRun[v]!));
  const tied = timed.filter((v) => msPerRun[v] === best || launchBound(msPerRun[v]!, dispatchMs));
  return { chosen: tied[0], tied };
}

/**
 * Times `candidates` in order (cheapest compile first) with `time` (ms per run, or undefined for a
 * variant that is skipped: unverified here, or naive on a large proxy): all of them, unless the
 * first one timed is launch-bound — it then wins whatever the others would measure, so they are
 * neither compiled nor timed.
 */
export async function timeCandidates(
  candidates: readonly GemmVariant[],
  time: (v: GemmVariant) => Promise<number | undefined>,
  dispatchMs: number,
): Promise<{ msPerRun: Partial<Record<GemmVariant, number>>; launchBound: boolean }> {
  const msPerRun: Partial<Record<GemmVariant, number>> = {};
  for (const v of candidates) {
    const ms = await time(v);
    if (ms === undefined) continue;
    msPerRun[v] = ms;
    if (Object.keys(msPerRun).length === 1 && launchBound(ms, dispatchMs)) return { msPerRun, launchBound: true };
  }
  return { msPerRun, launchBound: false };
}
